/**
 * A streamable-HTTP backend that dies mid-call fails its calls at once — plain and parked alike — not
 * at `callTimeoutMs` (30 minutes by default): the gateway sees the call's response stream break, the
 * backend no longer answers a ping, and the session is closed.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLegacyHttpServer, type LegacyHttpServer } from '../fixtures/legacy-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startHttpBackendProcess } from '../helpers/processes.js';
import { fileHas, until } from '../helpers/until.js';
import { assertWireResponse, post } from '../helpers/wire.js';

const callLog = join(mkdtempSync(join(tmpdir(), 'backend-faults-')), 'calls.log');
let backend: { child: ChildProcess; url: string };
let gw: RunningGateway;
beforeAll(async () => {
  backend = await startHttpBackendProcess(0, { FIXTURE_CALL_LOG: callLog });
  gw = await startGateway({ mcpServers: { web: { url: backend.url } } });
});
afterAll(async () => {
  await gw?.close();
  backend?.child.kill('SIGKILL');
});

describe('a streamable-HTTP backend that dies', () => {
  it('fails the calls waiting on it within seconds, parked or running', async () => {
    const parked = await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: { elicitation: {} } });
    const state = (parked.message['result'] as { requestState: string }).requestState;
    expect(state).toBeTruthy();
    const running = post(gw.url, 'tools/call', { name: 'slow', arguments: { id: 'dies' } }, { signal: AbortSignal.timeout(15_000) });
    await until('the slow call to reach the backend', () => fileHas(callLog, 'started dies'));
    backend.child.kill('SIGKILL');
    // "At once" is: long before the call's own timeout (30 minutes), within the 15 s the request
    // allows; how fast exactly is for `npm run bench`, not for a test on a loaded machine.
    const r = await running;
    assertWireResponse('tools/call', r.message);
    expect(r.message['error']).toMatchObject({ code: -32603, data: { reason: expect.stringMatching(/^backend_/) } });
    const retry = await post(
      gw.url,
      'tools/call',
      { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'x' } } }, requestState: state },
      { caps: { elicitation: {} }, signal: AbortSignal.timeout(15_000) },
    );
    assertWireResponse('tools/call', retry.message);
    expect(retry.message['error']).toBeDefined();
  });
});

describe('a streamable-HTTP backend that hangs', () => {
  let hung: { child: ChildProcess; url: string };
  let hgw: RunningGateway;
  beforeAll(async () => {
    hung = await startHttpBackendProcess();
    hgw = await startGateway({ mcpServers: { web: { url: hung.url } }, gateway: { healthCheckMs: 200, hungAfterMs: 1_000 } });
  });
  afterAll(async () => {
    hung?.child.kill('SIGCONT');
    await hgw?.close();
    hung?.child.kill('SIGKILL');
  });

  it('is found when silent on every exchange for hungAfterMs; its tools fail at once, lists come from cache, readiness says why', async () => {
    const before = await post(hgw.url, 'tools/list');
    const tools = (before.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(tools).toContain('echo');
    hung.child.kill('SIGSTOP'); // alive, connected, silent
    let ready: { status: string; backends: { state: string; lastError?: string }[] } = { status: '', backends: [] };
    await until('readiness to say the backend is down', async () => {
      ready = (await (await fetch(new URL('/readyz', hgw.url))).json()) as typeof ready;
      return ready.backends[0]?.state === 'down';
    });
    expect(ready.backends[0]).toMatchObject({
      state: 'down',
      lastError: expect.stringMatching(/silent on every exchange for 1000 ms \(did not answer a ping/),
    });
    // "At once" is: without waiting for the silent backend, which answers nothing while stopped (it
    // is SIGCONTed only after both answers, so an answer that waited on it would time out); the
    // 15 s bounds are for a loaded machine, how fast exactly is for `npm run bench`.
    const call = await post(hgw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { signal: AbortSignal.timeout(15_000) });
    expect(call.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_unavailable' } });
    const cached = await post(hgw.url, 'tools/list', {}, { signal: AbortSignal.timeout(15_000) });
    expect((cached.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(tools);
    hung.child.kill('SIGCONT');
    let again: Record<string, unknown> = {};
    await until('the backend to answer a call again', async () => {
      again = (await post(hgw.url, 'tools/call', { name: 'echo', arguments: { text: 'back' } })).message;
      return again['result'] !== undefined;
    });
    expect(again['result']).toMatchObject({ content: [{ text: 'back' }] });
  });
});

describe('a transport error on a shared streamable-HTTP session', () => {
  let dropping: LegacyHttpServer;
  let dgw: RunningGateway;
  beforeAll(async () => {
    dropping = await startLegacyHttpServer('dropping', 0, (body) => body.includes('"drop-me"'));
    dgw = await startGateway({ mcpServers: { web: { url: dropping.url } } });
  });
  afterAll(async () => {
    await dgw?.close();
    await dropping?.close();
  });

  it('ends only the call it hit; the calls parked on the same session carry on', async () => {
    const parked = await Promise.all([1, 2, 3].map(() => post(dgw.url, 'tools/call', { name: 'elicit_name' }, { caps: { elicitation: {} } })));
    const states = parked.map((r) => (r.message['result'] as { requestState: string }).requestState);
    const pingsBefore = dropping.pings;
    const hit = await post(dgw.url, 'tools/call', { name: 'echo', arguments: { text: 'drop-me' } }, { caps: { elicitation: {} } });
    expect(hit.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_unavailable' } });
    // The session is pinged after the failure: once the backend answered that ping, a session wrongly
    // dropped on its result would show below.
    await until('the backend to answer the ping after the failure', () => dropping.pings > pingsBefore);
    const done = await Promise.all(
      states.map((requestState, i) =>
        post(
          dgw.url,
          'tools/call',
          { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: `p${i}` } } }, requestState },
          { caps: { elicitation: {} } },
        ),
      ),
    );
    expect(done.map((r) => r.message['result'])).toEqual([0, 1, 2].map((i) => expect.objectContaining({ content: [{ type: 'text', text: `Hello, p${i}!` }] })));
  });
});

describe('a call whose response stream breaks while the backend lives on', () => {
  let breaking: LegacyHttpServer;
  let bgw: RunningGateway;
  beforeAll(async () => {
    breaking = await startLegacyHttpServer('breaking', 0, undefined, (body) => body.includes('"break-me"'));
    bgw = await startGateway({ mcpServers: { web: { url: breaking.url } } });
  });
  afterAll(async () => {
    await bgw?.close();
    await breaking?.close();
  });

  it('fails that call at once with backend_closed (its answer can no longer arrive); the calls parked beside it carry on', async () => {
    const caps = { elicitation: {} };
    const kept = await post(bgw.url, 'tools/call', { name: 'elicit_name' }, { caps });
    const keptState = (kept.message['result'] as { requestState: string }).requestState;
    const broken = await post(bgw.url, 'tools/call', { name: 'tagged', arguments: { tag: 'break-me' } }, { caps });
    const brokenResult = broken.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    expect(brokenResult.requestState).toBeTruthy();
    // Its stream breaks 300 ms later; the backend still answers a ping, so only that call ends.
    await until('the broken call to end', () => bgw.gateway.engine.live <= 1);
    expect(bgw.gateway.engine.live).toBe(1);
    const key = Object.keys(brokenResult.inputRequests)[0]!;
    const late = await post(
      bgw.url,
      'tools/call',
      {
        name: 'tagged',
        arguments: { tag: 'break-me' },
        inputResponses: { [key]: { action: 'accept', content: { value: 'v' } } },
        requestState: brokenResult.requestState,
      },
      { caps, signal: AbortSignal.timeout(10_000) },
    );
    expect(late.message['error']).toMatchObject({ code: -32602, message: expect.stringMatching(/connection closed before the call finished/) });
    const done = await post(
      bgw.url,
      'tools/call',
      { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'still here' } } }, requestState: keptState },
      { caps, signal: AbortSignal.timeout(10_000) },
    );
    expect(done.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, still here!' }] });
  });
});
