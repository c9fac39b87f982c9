/**
 * requestState is attacker-controlled input (2026-07-28 mrtr.mdx "requestState security"): tampered,
 * expired, foreign-principal, wrong-request, stale and orphaned states are refused with -32602 and a
 * stable reason, and a bad retry never disturbs the parked call. Missing responses are re-asked,
 * extra ones ignored, malformed ones rejected. Raw HTTP, every reply checked against the wire rules.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryCallDirectory } from '../../src/cluster/call-directory.js';
import { randomStateKey, type StateKey } from '../../src/protocol/request-state.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { fileHas, until } from '../helpers/until.js';
import { assertWireResponse, post, type PostOptions, type WireReply } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-0123456789ab';
const cancelLog = join(mkdtempSync(join(tmpdir(), 'state-')), 'cancel.log');
let key: StateKey;
let gw: RunningGateway;
/** The gateway's clock: expiry tests move it instead of sleeping. */
const clock = new ManualClock();
/** Shared by the in-process gateways of the cross-instance tests, as a cluster's directory would be; counts what is recorded. */
class CountedDirectory extends InMemoryCallDirectory {
  registered = 0;
  /** The next write fails (a directory that could not be reached). */
  failNext = false;
  override async register(callId: string, instanceId: string): Promise<void> {
    this.registered++;
    if (this.failNext) {
      this.failNext = false;
      throw new Error('the directory is away');
    }
    await super.register(callId, instanceId);
  }
}
const directory = new CountedDirectory();
const config = {
  mcpServers: { legacy: stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog }) },
  gateway: {
    requestStateTtlSeconds: 2,
    apiKeys: [
      { principal: 'alice', key: ALICE },
      { principal: 'bob', key: BOB },
    ],
  },
};

beforeAll(async () => {
  key = await randomStateKey();
  gw = await startGateway(config, { stateKeys: [key], instanceId: 'instance-a', clock, directory });
});
afterAll(async () => gw?.close());

const as = (apiKey: string, extra: PostOptions = {}): PostOptions => ({
  caps: { elicitation: {} },
  ...extra,
  headers: { authorization: `Bearer ${apiKey}`, ...extra.headers },
});

async function call(params: Record<string, unknown>, opts = as(ALICE), url = gw.url): Promise<WireReply> {
  const r = await post(url, 'tools/call', params, opts);
  assertWireResponse('tools/call', r.message);
  return r;
}

function inputRequired(r: WireReply): { requestState: string; inputRequests: Record<string, { method: string; params: { message: string } }> } {
  const result = r.message['result'] as { resultType: string };
  expect(result?.resultType, JSON.stringify(r.message)).toBe('input_required');
  return result as never;
}

function firstText(r: WireReply): string | undefined {
  return (r.message['result'] as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text;
}

function errorOf(r: WireReply): { code: number; message: string; data?: { reason?: string } } {
  return r.message['error'] as never;
}

const answer = (value: string) => ({ action: 'accept', content: { name: value, color: value } });

describe('requestState', () => {
  it('rejects a tampered state with -32602 and leaves the parked call usable', async () => {
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    const bad = await call({ name: 'elicit_name', inputResponses: { user_name: answer('x') }, requestState: `${ir.requestState}-TAMPERED` });
    expect(bad.status).toBe(200);
    expect(errorOf(bad).code).toBe(-32602);
    expect(errorOf(bad).data?.reason).toMatch(/^request_state_(malformed|invalid)$/);
    // One character of the tag that is all data (the last may hold spare bits).
    const flipped = ir.requestState.slice(0, -3) + (ir.requestState.at(-3) === 'A' ? 'B' : 'A') + ir.requestState.slice(-2);
    expect(errorOf(await call({ name: 'elicit_name', inputResponses: { user_name: answer('x') }, requestState: flipped }))).toMatchObject({
      code: -32602,
      data: { reason: 'request_state_invalid' },
    });
    const good = await call({ name: 'elicit_name', inputResponses: { user_name: answer('Ada') }, requestState: ir.requestState });
    expect(good.message['result']).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Hello, Ada!' }] });
  });

  it('refuses a state minted for another principal', async () => {
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    const r = await call({ name: 'elicit_name', inputResponses: { user_name: answer('x') }, requestState: ir.requestState }, as(BOB));
    expect(errorOf(r)).toMatchObject({ code: -32602, data: { reason: 'request_state_principal' } });
  });

  it('asks again, under a new state, a retry that answers nothing; the old state is then stale and the new one completes', async () => {
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    const again = inputRequired(await call({ name: 'elicit_name', inputResponses: {}, requestState: ir.requestState }));
    expect(Object.keys(again.inputRequests)).toEqual(Object.keys(ir.inputRequests));
    expect(again.requestState).not.toBe(ir.requestState);
    const key = Object.keys(ir.inputRequests)[0]!;
    const old = await call({ name: 'elicit_name', inputResponses: { [key]: answer('late') }, requestState: ir.requestState });
    expect(errorOf(old)).toMatchObject({ code: -32602, data: { reason: 'request_state_stale' } });
    expect(firstText(await call({ name: 'elicit_name', inputResponses: { [key]: answer('Ada') }, requestState: again.requestState }))).toContain('Ada');
  });

  it('refuses a state presented with a different request', async () => {
    const ir = inputRequired(await call({ name: 'tagged', arguments: { tag: 'a' } }));
    const r = await call({ name: 'tagged', arguments: { tag: 'b' }, inputResponses: {}, requestState: ir.requestState });
    expect(errorOf(r)).toMatchObject({ code: -32602, data: { reason: 'request_state_request' } });
  });

  it('binds the state to every param but the round fields and _meta: an added task hint, a changed argument or an unknown param is request_state_request, and the parked call is not consumed', async () => {
    const ir = inputRequired(await call({ name: 'tagged', arguments: { tag: 'a' } }));
    const key = Object.keys(ir.inputRequests)[0]!;
    const round = { inputResponses: { [key]: { action: 'accept', content: { value: 'attacker' } } }, requestState: ir.requestState };
    const altered = [
      { name: 'tagged', arguments: { tag: 'a' }, task: { ttl: 60_000 }, ...round },
      { name: 'tagged', arguments: { tag: 'a', extra: 1 }, ...round },
      { name: 'tagged', arguments: { tag: 'b' }, ...round },
      { name: 'tagged', arguments: { tag: 'a' }, somethingNew: true, ...round },
      { name: 'tagged', ...round },
    ];
    for (const params of altered) {
      expect(errorOf(await call(params)), JSON.stringify(params)).toMatchObject({ code: -32602, data: { reason: 'request_state_request' } });
    }
    // Only `_meta` may differ (it is not part of the request's meaning).
    const answered = { inputResponses: { [key]: { action: 'accept', content: { value: 'mine' } } }, requestState: ir.requestState };
    const done = await call({ name: 'tagged', arguments: { tag: 'a' }, ...answered }, as(ALICE, { meta: { progressToken: 'p-1' } }));
    expect(done.message['result']).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'tag=a answer=mine' }] });
  });

  it('refuses a stale state once its round was answered', async () => {
    const r1 = inputRequired(await call({ name: 'elicit_two' }));
    const k1 = Object.keys(r1.inputRequests)[0]!;
    const r2 = inputRequired(await call({ name: 'elicit_two', inputResponses: { [k1]: answer('Ada') }, requestState: r1.requestState }));
    expect(r2.requestState).not.toBe(r1.requestState);
    const replay = await call({ name: 'elicit_two', inputResponses: { [k1]: answer('Eve') }, requestState: r1.requestState });
    expect(errorOf(replay)).toMatchObject({ code: -32602, data: { reason: 'request_state_stale' } });
    const k2 = Object.keys(r2.inputRequests)[0]!;
    const done = await call({ name: 'elicit_two', inputResponses: { [k2]: answer('blue') }, requestState: r2.requestState });
    expect(done.message['result']).toMatchObject({ content: [{ text: 'Ada likes blue' }] });
    // The call has ended: a replay of its last round, or of an earlier one, is still stale (not gone).
    for (const [state, key] of [
      [r2.requestState, k2],
      [r1.requestState, k1],
    ] as const) {
      const again = await call({ name: 'elicit_two', inputResponses: { [key]: answer('red') }, requestState: state });
      expect(errorOf(again)).toMatchObject({
        code: -32602,
        data: { reason: 'request_state_stale' },
        message: expect.stringMatching(/already answered, and the call has ended/),
      });
    }
  });

  it('re-asks for a missing response with the same key and ignores keys it did not ask for', async () => {
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    const again = inputRequired(await call({ name: 'elicit_name', inputResponses: { not_requested: answer('x') }, requestState: ir.requestState }));
    expect(Object.keys(again.inputRequests)).toEqual(['user_name']);
    expect(again.inputRequests['user_name']!.params.message).toBe('What is your name?');
    const done = await call({ name: 'elicit_name', inputResponses: { user_name: answer('Bo'), extra: answer('y') }, requestState: again.requestState });
    expect(done.message['result']).toMatchObject({ content: [{ text: 'Hello, Bo!' }] });
  });

  it('rejects malformed responses with -32602 without disturbing the parked call', async () => {
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    for (const inputResponses of [null, 'x', { user_name: 12345 }, { user_name: { action: 'maybe' } }]) {
      const r = await call({ name: 'elicit_name', inputResponses, requestState: ir.requestState });
      expect(errorOf(r), JSON.stringify(inputResponses)).toMatchObject({ code: -32602, data: { reason: 'input_responses_invalid' } });
    }
    const done = await call({ name: 'elicit_name', inputResponses: { user_name: answer('Cy') }, requestState: ir.requestState });
    expect(done.message['result']).toMatchObject({ content: [{ text: 'Hello, Cy!' }] });
  });

  it('completes a fresh request that already carries the named response, ignoring extras', async () => {
    const r = await call({ name: 'elicit_name', inputResponses: { user_name: answer('Dee'), unknown_extra_key: answer('z') } });
    expect(r.message['result']).toMatchObject({ resultType: 'complete', content: [{ text: 'Hello, Dee!' }] });
  });

  it('refuses an expired state and cancels the expired parked call in the backend', async () => {
    clock.advance(2_000); // calls parked by earlier tests expire
    expect(gw.gateway.engine.size).toBe(0);
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    expect(gw.gateway.engine.size).toBe(1);
    clock.advance(1_999);
    expect(gw.gateway.engine.size).toBe(1);
    clock.advance(1);
    const r = await call({ name: 'elicit_name', inputResponses: { user_name: answer('late') }, requestState: ir.requestState });
    expect(errorOf(r)).toMatchObject({ code: -32602, data: { reason: 'request_state_expired' } });
    expect(gw.gateway.engine.size).toBe(0);
  });

  /** Parks a call on this gateway, then presents its state to another gateway with the same key. */
  async function retryElsewhere(instanceId: string): Promise<ReturnType<typeof errorOf>> {
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    const other = await startGateway(config, { stateKeys: [key], instanceId, clock, directory });
    try {
      return errorOf(await call({ name: 'elicit_name', inputResponses: { user_name: answer('x') }, requestState: ir.requestState }, as(ALICE), other.url));
    } finally {
      await other.close();
    }
  }

  it('tells the client to start again when the parked call no longer exists (gateway restarted with the same id)', async () => {
    const error = await retryElsewhere('instance-a');
    expect(error).toMatchObject({ code: -32602, data: { reason: 'request_state_gone' } });
    expect(error.message).toMatch(/Start the request again/);
  });

  it('records in the call directory only the calls a retry may name: a parked call before its input_required leaves, never a call done at once', async () => {
    const before = { size: directory.size, registered: directory.registered };
    expect(firstText(await call({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');
    expect(directory.registered).toBe(before.registered);
    const ir = inputRequired(await call({ name: 'elicit_name' }));
    expect(directory.registered).toBe(before.registered + 1);
    expect(directory.size).toBe(before.size + 1);
    await call({ name: 'elicit_name', inputResponses: { user_name: answer('Ada') }, requestState: ir.requestState });
  });

  it('ends a call the directory could not record when it parked: no requestState may name it', async () => {
    const live = gw.gateway.engine.live;
    directory.failNext = true;
    expect(errorOf(await call({ name: 'elicit_name' })).code).toBe(-32603);
    await until('the call to end', () => gw.gateway.engine.live === live);
  });

  it('names another instance when the directory says another instance holds the call', async () => {
    expect(await retryElsewhere('instance-b')).toMatchObject({ code: -32602, data: { reason: 'request_state_instance' } });
  });

  it('cancels the backend call of a parked call that is never retried', async () => {
    const ir = inputRequired(await call({ name: 'elicit_then_slow', arguments: { id: 'expired-1' } }));
    expect(ir.requestState).toBeTruthy();
    expect(gw.gateway.engine.size).toBeGreaterThan(0);
    clock.advance(2_000);
    expect(gw.gateway.engine.size).toBe(0);
    // The backend process logs the cancellation it received: wait for that file write.
    await until('the backend to log the cancellation', () => fileHas(cancelLog, 'cancelled expired-1'));
  });

  it('answers the retry with what the backend finished with after it gave up waiting for the answer (v1 SDK elicitation timeout)', async () => {
    const ir = inputRequired(await call({ name: 'elicit_impatient', arguments: { ms: 300 } }));
    // the backend withdraws its request after 300 ms and ends the call (its own deadline, not ours)
    await until('the backend to end the call', () => gw.gateway.engine.size === 0);
    const key = Object.keys(ir.inputRequests)[0]!;
    const r = await call({ name: 'elicit_impatient', arguments: { ms: 300 }, inputResponses: { [key]: answer('late') }, requestState: ir.requestState });
    // The backend's own answer (a v1 server turns its timeout into an isError result), not "gone".
    const result = (r.message['result'] ?? {}) as { isError?: boolean; content?: { text?: string }[] };
    expect(result.isError, JSON.stringify(r.message)).toBe(true);
    expect(result.content?.[0]?.text).toMatch(/timed out/i);
    // Given once: the same retry again is a replay of a round already answered.
    const again = await call({ name: 'elicit_impatient', arguments: { ms: 300 }, inputResponses: { [key]: answer('late') }, requestState: ir.requestState });
    expect(errorOf(again)).toMatchObject({ code: -32602, data: { reason: 'request_state_stale' } });
  });

  it('requires a valid API key when keys are configured', async () => {
    const r = await post(gw.url, 'tools/list', {}, { headers: { authorization: 'Bearer wrong-key-000000000' } });
    expect(r.status).toBe(401);
    const none = await post(gw.url, 'tools/list', {});
    expect(none.status).toBe(401);
  });
});
