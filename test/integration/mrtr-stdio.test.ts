/**
 * MRTR over a legacy stdio backend, driven by the official v2 client (which runs the rounds itself):
 * the backend's mid-call elicitation/sampling/roots requests reach the client as inputRequests and
 * the answers reach the backend request they belong to.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { connectClient, firstText, startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { wireChecked, wireStats, wireViolations } from '../helpers/gateway.js';
import { fileHas, until } from '../helpers/until.js';
import { assertWireResponse, post } from '../helpers/wire.js';

const dir = mkdtempSync(join(tmpdir(), 'mrtr-'));
const cancelLog = join(dir, 'cancel.log');
const callLog = join(dir, 'calls.log');
let gw: RunningGateway;

beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog, FIXTURE_CALL_LOG: callLog }) },
    // coalesceQuietMs: the two requests of `both` in one round even when a loaded machine splits their writes.
    gateway: { maxSessionsPerBackend: 8, coalesceMs: 30, coalesceQuietMs: 30, roots: [{ uri: 'file:///configured', name: 'configured' }] },
  });
});
afterAll(async () => gw?.close());

async function fullClient(): Promise<Client> {
  const client = await connectClient(gw.url, { elicitation: { form: {} }, sampling: {}, roots: {} });
  client.setRequestHandler('elicitation/create', async (req) => {
    const msg = String(req.params.message);
    if (msg.startsWith('Step 1')) return { action: 'accept', content: { name: 'Ada' } };
    if (msg.startsWith('Step 2')) return { action: 'accept', content: { color: 'green' } };
    if (msg.startsWith('Login')) return { action: 'accept', content: { login: 'octocat' } };
    return { action: 'accept', content: { name: 'Grace', context: 'ctx', x: 'y', word: 'w' } };
  });
  client.setRequestHandler('sampling/createMessage', async () => ({
    role: 'assistant',
    content: { type: 'text', text: 'Paris' },
    model: 'test-model',
    stopReason: 'endTurn',
  }));
  client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
  return client;
}

describe('MRTR over a stdio legacy backend (v2 client)', () => {
  it('completes a single elicitation round', async () => {
    const client = await fullClient();
    const r = await client.callTool({ name: 'elicit_name', arguments: {} });
    expect(firstText(r)).toBe('Hello, Grace!');
    await client.close();
  });

  it('completes two sequential elicitation rounds with different requestStates', async () => {
    const client = await fullClient();
    const r = await client.callTool({ name: 'elicit_two', arguments: {} });
    expect(firstText(r)).toBe('Ada likes green');
    await client.close();
  });

  it('relays sampling and roots', async () => {
    const client = await fullClient();
    expect(firstText(await client.callTool({ name: 'sample', arguments: { prompt: 'Capital?' } }))).toBe('LLM: Paris');
    expect(firstText(await client.callTool({ name: 'roots', arguments: {} }))).toBe('roots: file:///work');
    await client.close();
  });

  it('sends two concurrent backend requests in one round and answers both', async () => {
    const r1 = await post(gw.url, 'tools/call', { name: 'both', arguments: {} }, { caps: { elicitation: {}, sampling: {} } });
    assertWireResponse('tools/call', r1.message);
    const result = r1.message['result'] as { inputRequests: Record<string, { method: string }>; requestState: string };
    expect(Object.keys(result.inputRequests).sort()).toEqual(['github_login', 'sampling_1']);
    expect(result.inputRequests['github_login']!.method).toBe('elicitation/create');
    expect(result.inputRequests['sampling_1']!.method).toBe('sampling/createMessage');
    const r2 = await post(
      gw.url,
      'tools/call',
      {
        name: 'both',
        arguments: {},
        inputResponses: {
          github_login: { action: 'accept', content: { login: 'octocat' } },
          sampling_1: { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'm' },
        },
        requestState: result.requestState,
      },
      { caps: { elicitation: {}, sampling: {} } },
    );
    assertWireResponse('tools/call', r2.message);
    expect((r2.message['result'] as { content: { text: string }[] }).content[0]!.text).toBe('login=octocat capital=Paris');
  });

  it('relays elicitation inside prompts/get and resources/read', async () => {
    const client = await fullClient();
    const p = await client.getPrompt({ name: 'ask_prompt' });
    expect(JSON.stringify(p.messages)).toContain('Prompt with context: ctx');
    const r = await client.readResource({ uri: 'test://asked' });
    expect((r.contents[0] as { text: string }).text).toBe('word=w');
    await client.close();
  });

  it('answers a roots/list that belongs to no client request from configuration', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'init_roots', arguments: {} }, { caps: { roots: {} } });
    expect(r.message['result']).toMatchObject({ content: [{ text: 'init roots: file:///configured' }] });
  });

  it('delivers progress notifications on the call stream', async () => {
    const client = await fullClient();
    const seen: number[] = [];
    const r = await client.callTool({ name: 'progress', arguments: { steps: 3 } }, { onprogress: (p) => seen.push(p.progress) });
    expect(firstText(r)).toBe('done 3');
    expect(seen).toEqual([1, 2, 3]);
    await client.close();
  });

  it('answers -32021 when the backend asks for a capability the request did not declare', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'sample_anyway', arguments: {} }, { caps: { elicitation: {} } });
    assertWireResponse('tools/call', r.message);
    expect(r.status).toBe(400);
    expect(r.message['error']).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
  });

  it('never sends an input request the client did not declare (backend sees the same capabilities)', async () => {
    // The session serving this call declared no elicitation, so the v1 backend refuses to elicit itself.
    const r = await post(gw.url, 'tools/call', { name: 'elicit_name', arguments: {} }, { caps: { sampling: {} } });
    assertWireResponse('tools/call', r.message);
    const result = r.message['result'] as { resultType: string; isError?: boolean };
    expect(result.resultType).toBe('complete');
    expect(result.isError).toBe(true);
  });

  it('ends only the call whose client went away on a session that calls without input capabilities share: the others finish', async () => {
    // Without configured roots, as the demo: calls that can be asked nothing share one backend session.
    const plain = await startGateway({ mcpServers: { legacy: stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog, FIXTURE_CALL_LOG: callLog }) } });
    onTestFinished(() => plain.close());
    // A call first: its session stays ready, and the calls below join it rather than each starting one.
    expect((await post(plain.url, 'tools/call', { name: 'echo', arguments: { text: 'warm' } })).message['result']).toBeDefined();
    const ids = ['shared-0', 'shared-1', 'shared-2', 'shared-3'];
    const gone = new AbortController();
    const calls = ids.map((id, i) =>
      post(plain.url, 'tools/call', { name: 'slow', arguments: { id, ms: 4_000 } }, i === 0 ? { signal: gone.signal } : {}).then(
        (r) => r.message,
        (e: unknown) => ({ aborted: (e as Error).name }),
      ),
    );
    // Every call is on the backend before the first client goes.
    await until('the four calls started', () => ids.every((id) => fileHas(callLog, `started ${id}`)));
    gone.abort();
    const [first, ...others] = await Promise.all(calls);
    expect(first).toEqual({ aborted: 'AbortError' });
    for (const m of others) expect(m).toMatchObject({ result: { content: [{ text: 'finished' }] } });
    await until('the first call cancelled at the backend', () => fileHas(cancelLog, 'cancelled shared-0'));
  });

  it('discards a shared session whose call timed out (its process may be stuck): the next call gets a process that answers', async () => {
    const plain = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { callTimeoutMs: 1_500 } });
    onTestFinished(() => plain.close());
    expect((await post(plain.url, 'tools/call', { name: 'echo', arguments: { text: 'warm' } })).message['result']).toBeDefined();
    const stuck = await post(plain.url, 'tools/call', { name: 'block', arguments: { ms: 30_000 } });
    expect(stuck.message['error']).toMatchObject({ data: { reason: 'backend_timeout' } });
    const next = await post(plain.url, 'tools/call', { name: 'pid', arguments: {} });
    expect(next.message['result']).toMatchObject({ content: [{ type: 'text' }] });
  });

  it('fails the call with a clear error when the backend crashes mid-call', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'crash', arguments: {} });
    assertWireResponse('tools/call', r.message);
    expect(r.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_closed' } });
    // the gateway keeps serving
    const ok = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'still here' } });
    expect((ok.message['result'] as { content: { text: string }[] }).content[0]!.text).toBe('still here');
  });

  it('fails a parked call on retry when the backend crashed while it waited', async () => {
    const r1 = await post(gw.url, 'tools/call', { name: 'elicit_then_crash', arguments: {} }, { caps: { elicitation: {} } });
    expect(r1.message['error']).toBeUndefined();
    const { requestState, inputRequests } = r1.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(inputRequests)[0]!;
    const r2 = await post(
      gw.url,
      'tools/call',
      { name: 'elicit_then_crash', arguments: {}, inputResponses: { [key]: { action: 'accept', content: { x: '1' } } }, requestState },
      { caps: { elicitation: {} } },
    );
    expect(r2.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_closed' } });
  });

  it('cancels the backend call when the client disconnects while waiting', async () => {
    const ac = new AbortController();
    const pending = post(gw.url, 'tools/call', { name: 'slow', arguments: { id: 'disc-1' } }, { signal: ac.signal }).catch((e: unknown) => e);
    await until('the slow call to reach the backend', () => fileHas(callLog, 'started disc-1'));
    ac.abort();
    await pending;
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled disc-1'));
    expect(readFileSync(cancelLog, 'utf8')).toContain('cancelled disc-1');
  });
});

describe('wire', () => {
  it('sent only schema-valid 2026-07-28 messages to the SDK clients above', async () => {
    await wireChecked(); // the replies' checks read their bodies after the clients did
    expect(wireViolations).toEqual([]);
    expect(wireStats.checked).toBeGreaterThan(0);
  });
});
