/**
 * Backend sessions follow the caller: lists and routing go through a session that declared the
 * caller's capability set (servers show some tools only to clients that can be asked); a session
 * serves one principal unless the server is marked `"isolation": "shared"`; and one principal's
 * parked calls cannot take more than its share of a backend's sessions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LegacyBackend } from '../../src/core/backend/legacy-backend.js';
import { firstText, startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { inProcess, post, type PostOptions, type WireReply } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-0123456789ab';
const CAROL = 'carol-key-0123456789';
const keys = [
  { principal: 'alice', key: ALICE },
  { principal: 'bob', key: BOB },
  { principal: 'carol', key: CAROL },
];
const as = (key: string, caps: Record<string, unknown> = {}): PostOptions => ({ caps, headers: { authorization: `Bearer ${key}` } });
const textOf = (r: WireReply): string => firstText(r.message['result'] as { content?: unknown });

let gw: RunningGateway;
let shared: RunningGateway;
beforeAll(async () => {
  [gw, shared] = await Promise.all([
    startGateway({ mcpServers: { legacy: { ...stdioFixture(), maxSessions: 4 } }, gateway: { apiKeys: keys } }),
    startGateway({ mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared' } }, gateway: { apiKeys: keys } }),
  ]);
});
afterAll(async () => Promise.all([gw?.close(), shared?.close()]));

async function toolNames(g: RunningGateway, opts: PostOptions): Promise<string[]> {
  const r = await post(g.url, 'tools/list', {}, { ...opts, fetch: inProcess(g.gateway) });
  return (r.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
}

describe('backend sessions', () => {
  it('lists and routes the tools a backend shows only to callers with the capability', async () => {
    expect(await toolNames(gw, as(ALICE))).not.toContain('ask_user');
    expect(await toolNames(gw, as(ALICE, { elicitation: {} }))).toContain('ask_user');
    const unknown = await post(gw.url, 'tools/call', { name: 'ask_user' }, as(ALICE));
    // Unknown to this caller, and the refusal says why: the server lists it only to clients that declare more.
    expect(unknown.message['error']).toMatchObject({
      code: -32602,
      message: expect.stringMatching(
        /^Unknown tool: ask_user \(its server lists this tool only to clients that declare more input capabilities: .*; this request declared none\)$/,
      ),
    });
    // A name no view lists is plainly unknown.
    const none = await post(gw.url, 'tools/call', { name: 'no_such_tool' }, as(ALICE));
    expect(none.message['error']).toMatchObject({ code: -32602, message: 'Unknown tool: no_such_tool' });
    const asked = await post(gw.url, 'tools/call', { name: 'ask_user' }, as(ALICE, { elicitation: {} }));
    expect(asked.message['result']).toMatchObject({ resultType: 'input_required', inputRequests: { answer: { method: 'elicitation/create' } } });
    const requestState = (asked.message['result'] as { requestState: string }).requestState;
    const done = await post(
      gw.url,
      'tools/call',
      { name: 'ask_user', inputResponses: { answer: { action: 'accept', content: { answer: 'yes' } } }, requestState },
      as(ALICE, { elicitation: {} }),
    );
    expect(textOf(done)).toBe('answered yes');
  });

  it('never lets two principals share a backend session by default; "isolation": "shared" does', async () => {
    const pid = async (g: RunningGateway, key: string) => textOf(await post(g.url, 'tools/call', { name: 'pid' }, as(key)));
    const [a1, b1] = [await pid(gw, ALICE), await pid(gw, BOB)];
    expect(a1).not.toBe(b1);
    expect(await pid(gw, ALICE)).toBe(a1); // alice's idle session is reused for alice
    const [a2, b2] = [await pid(shared, ALICE), await pid(shared, BOB)];
    expect(a2).toBe(b2);
  });

  it('multiplexes the calls of a caller that can be asked nothing on one stdio session', async () => {
    const backend = gw.gateway.backends[0] as LegacyBackend;
    const before = backend.stats.sessions;
    const pids = await Promise.all(Array.from({ length: 20 }, async () => textOf(await post(gw.url, 'tools/call', { name: 'pid' }, as(ALICE)))));
    expect(new Set(pids).size).toBe(1);
    expect(backend.stats.sessions).toBeLessThanOrEqual(before + 1);
  });

  it("keeps one principal's parked calls to its share of the sessions, so others still get through", async () => {
    const backend = gw.gateway.backends[0] as LegacyBackend;
    // maxSessions 4, two principals: alice may hold 2 at once.
    const parked = await Promise.all([1, 2].map(() => post(gw.url, 'tools/call', { name: 'elicit_name' }, as(ALICE, { elicitation: {} }))));
    for (const r of parked) expect(r.message['result']).toMatchObject({ resultType: 'input_required' });
    const third = post(gw.url, 'tools/call', { name: 'elicit_name' }, as(ALICE, { elicitation: {} }));
    await until('the third call to queue for a session', () => backend.stats.waiting > 0);
    expect(backend.stats.waiting).toBe(1);
    const bob = await post(gw.url, 'tools/call', { name: 'elicit_name' }, as(BOB, { elicitation: {} }));
    expect(bob.message['result']).toMatchObject({ resultType: 'input_required' });
    // alice answers one of hers: her queued call gets the freed share
    const state = (parked[0]!.message['result'] as { requestState: string }).requestState;
    const done = await post(
      gw.url,
      'tools/call',
      { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'A' } } }, requestState: state },
      as(ALICE, { elicitation: {} }),
    );
    expect(textOf(done)).toBe('Hello, A!');
    expect((await third).message['result']).toMatchObject({ resultType: 'input_required' });
  });

  it("asks the principal's own client for a roots/list the backend sends on its own at start-up (no roots configured)", async () => {
    const first = await post(gw.url, 'tools/call', { name: 'init_roots' }, as(BOB, { roots: {} }));
    expect(first.message['result']).toMatchObject({ resultType: 'input_required', inputRequests: { roots_1: { method: 'roots/list' } } });
    const requestState = (first.message['result'] as { requestState: string }).requestState;
    const done = await post(
      gw.url,
      'tools/call',
      { name: 'init_roots', inputResponses: { roots_1: { roots: [{ uri: 'file:///home/bob', name: 'bob' }] } }, requestState },
      as(BOB, { roots: {} }),
    );
    expect(textOf(done)).toBe('init roots: file:///home/bob');
    // the session keeps what it was told: bob's next call on it asks nothing
    expect(textOf(await post(gw.url, 'tools/call', { name: 'init_roots' }, as(BOB, { roots: {} })))).toBe('init roots: file:///home/bob');
  });

  it('sends the call to a backend that asked for roots at start-up only once they are answered (it serves calls with the roots it has, as a filesystem server does)', async () => {
    const first = await post(gw.url, 'tools/call', { name: 'roots_now' }, as(CAROL, { roots: {} }));
    expect(first.message['result']).toMatchObject({ resultType: 'input_required', inputRequests: { roots_1: { method: 'roots/list' } } });
    const requestState = (first.message['result'] as { requestState: string }).requestState;
    const retry = { name: 'roots_now', inputResponses: { roots_1: { roots: [{ uri: 'file:///home/carol' }] } }, requestState };
    expect(textOf(await post(gw.url, 'tools/call', retry, as(CAROL, { roots: {} })))).toBe('roots now: file:///home/carol');
    expect(textOf(await post(gw.url, 'tools/call', { name: 'roots_now' }, as(CAROL, { roots: {} })))).toBe('roots now: file:///home/carol');
  });
});
