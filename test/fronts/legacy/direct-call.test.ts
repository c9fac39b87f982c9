/**
 * A legacy session's plain `tools/call`, answered as JSON beside the SDK server when nothing can be
 * streamed to its client (src/fronts/legacy/direct-call.ts), against the real gateway, a stdio
 * backend and the SDK v1 client: the same answers as the SDK's own path gives a session that can be
 * asked, the SDK's path for everything else, and cancellation by the client or by the session's end.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startGateway, stdioFixture, type RunningGateway } from '../../helpers/gateway.js';
import { fileHas, until } from '../../helpers/until.js';
import { openLegacySession, readReply, readSseEvents, type WireReply } from '../../helpers/wire.js';

const KEY = 'direct-key-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'direct-call-'));
const cancelLog = join(dir, 'cancel.log');
const callLog = join(dir, 'calls.log');
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${KEY}` };
let gw: RunningGateway;

beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: { ...stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog, FIXTURE_CALL_LOG: callLog }), isolation: 'shared' } },
    // Answers stay JSON however long a call takes on a loaded machine (the move to a stream after a
    // while is the second gateway's, below, with legacyJsonAnswerMs 0).
    gateway: { coalesceMs: 0, legacyJsonAnswerMs: 60_000, apiKeys: [{ principal: 'alice', key: KEY }] },
  });
});
afterAll(async () => gw?.close());

/** One raw message POSTed in session `sid` (2025-11-25 headers); its reply. */
async function send(sid: string, message: unknown, headers: Record<string, string> = {}): Promise<WireReply> {
  const res = await fetch(gw.url, {
    method: 'POST',
    headers: { ...HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', ...headers },
    body: JSON.stringify(message),
  });
  return readReply(res);
}
const call = (id: number | string, params: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params });

describe("a legacy session's plain tools/call", () => {
  it("answers as JSON what the SDK server answers on its stream (the same call in a batch of one, which the SDK serves), whatever the session's capabilities", async () => {
    const sessions = [await openLegacySession(gw.url, HEADERS, 'plain'), await openLegacySession(gw.url, HEADERS, 'askable', { elicitation: {}, roots: {} })];
    const cases: Record<string, unknown>[] = [
      { name: 'echo', arguments: { text: 'hello' } },
      { name: 'echo', arguments: { text: 'with meta' }, _meta: { 'example.com/trace': 'x' } },
      { name: 'echo', arguments: { text: 'with a token' }, _meta: { progressToken: 7 } }, // nothing to report: still JSON
      { name: 'echo', arguments: { text: 5 } }, // the backend's own isError answer
      { name: 'rich' }, // past plain text: the SDK's schema decides it
      { name: 'malformed' }, // and refuses this one
      { name: 'malformed_structured' }, // or this one (structuredContent must be an object in 2025)
      { name: 'fail_rpc', arguments: { id: 'r1' } }, // a JSON-RPC error of the backend's
      { name: 'no_such_tool', arguments: {} }, // the gateway's own error
    ];
    for (const sid of sessions) {
      for (const [i, params] of cases.entries()) {
        const direct = await send(sid, call(i + 1, params));
        const viaSdk = await send(sid, [call(i + 1, params)]);
        expect(direct.contentType, JSON.stringify(params)).toContain('application/json');
        expect(viaSdk.contentType, JSON.stringify(params)).toContain('text/event-stream');
        expect(direct.status).toBe(200);
        expect(direct.headers.get('mcp-session-id')).toBe(sid);
        expect(direct.message, JSON.stringify(params)).toEqual(viaSdk.message);
      }
    }
  });

  it("serves the SDK v1 client's calls that way, and its cancellation cancels the backend call", async () => {
    const types: string[] = [];
    const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const res = await fetch(input, init);
      if (init?.method === 'POST') types.push(res.headers.get('content-type') ?? '');
      return res;
    };
    const client = new Client({ name: 'agent', version: '1.0.0' }, { capabilities: {} });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${KEY}` } }, fetch: recording }),
    );
    types.length = 0;
    const result = await client.callTool({ name: 'echo', arguments: { text: 'from v1' } });
    expect(result.content).toEqual([{ type: 'text', text: 'from v1' }]);
    expect(types).toEqual(['application/json']);

    const errors: string[] = [];
    client.onerror = (e) => void errors.push(e.message);
    const ac = new AbortController();
    const pending = client.callTool({ name: 'slow', arguments: { id: 'direct-v1-cancel', ms: 60_000 } }, undefined, { signal: ac.signal });
    await until('the slow call to reach the backend', () => fileHas(callLog, 'started direct-v1-cancel'));
    ac.abort();
    await expect(pending).rejects.toThrow();
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled direct-v1-cancel'));
    // No answer came for the request it gave up on (the client would report one as unknown).
    await client.callTool({ name: 'echo', arguments: { text: 'after' } });
    expect(errors).toEqual([]);
    await client.close();
  });

  it('cancels a call its SDK v1 client gives up on mid-elicitation: the backend call is cancelled, the client hears nothing more', async () => {
    const client = new Client({ name: 'host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    const errors: string[] = [];
    client.onerror = (e) => void errors.push(e.message);
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    client.setRequestHandler(ElicitRequestSchema, async (_req, extra) => {
      asked();
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
      return { action: 'cancel' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    const ac = new AbortController();
    const pending = client.callTool({ name: 'elicit_then_slow', arguments: { id: 'direct-stream-cancel' } }, undefined, { signal: ac.signal });
    await wasAsked; // the call has moved to a stream: its elicitation went out on it
    ac.abort();
    await expect(pending).rejects.toThrow();
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled direct-stream-cancel'));
    expect((await client.callTool({ name: 'echo', arguments: { text: 'after' } })).content).toEqual([{ type: 'text', text: 'after' }]);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('answers a call its client cancelled with nothing, and one its session ended with the cancelled error; both are cancelled at the backend', async () => {
    const sid = await openLegacySession(gw.url, HEADERS, 'canceller');
    const first = send(sid, call(7, { name: 'slow', arguments: { id: 'direct-raw-cancel', ms: 60_000 } }));
    await until('the first call to reach the backend', () => fileHas(callLog, 'started direct-raw-cancel'));
    const ack = await fetch(gw.url, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'changed my mind' } }),
    });
    expect(ack.status).toBe(202);
    // A cancelled request gets no answer (2025-11-25 cancellation), as from the SDK server: its POST ends empty.
    const cancelled = await first;
    expect(cancelled.status).toBe(200);
    expect(cancelled.message).toEqual({});
    expect(cancelled.notifications).toEqual([]);
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled direct-raw-cancel'));

    const second = send(sid, call(8, { name: 'slow', arguments: { id: 'direct-raw-delete', ms: 60_000 } }));
    await until('the second call to reach the backend', () => fileHas(callLog, 'started direct-raw-delete'));
    const del = await fetch(gw.url, { method: 'DELETE', headers: { ...HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
    expect(del.status).toBe(200);
    // Its client did not cancel it: it is told why it ended.
    const ended = await second;
    expect(ended.message).toMatchObject({ jsonrpc: '2.0', id: 8, error: { code: -32603, data: { reason: 'cancelled' } } });
    expect((ended.message['error'] as { message: string }).message).toContain('the session ended');
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled direct-raw-delete'));
  });

  it('moves to a stream at the first thing it must stream (progress, log lines), streaming what the SDK streams', async () => {
    const sid = await openLegacySession(gw.url, HEADERS, 'streamer');
    const progress = { name: 'progress', arguments: { steps: 3, gapMs: 5 }, _meta: { progressToken: 'tok' } };
    const direct = await send(sid, call(1, progress));
    const viaSdk = await send(sid, [call(1, progress)]);
    expect(direct.contentType).toContain('text/event-stream');
    expect(direct.notifications.map((n) => (n['params'] as { progress: number }).progress)).toEqual([1, 2, 3]);
    expect({ notifications: direct.notifications, message: direct.message }).toEqual({ notifications: viaSdk.notifications, message: viaSdk.message });
    const level = await send(sid, { jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'info' } });
    expect(level.message['result']).toEqual({});
    const logged = await send(sid, call(3, { name: 'logs' }));
    const loggedViaSdk = await send(sid, [call(3, { name: 'logs' })]);
    expect(logged.contentType).toContain('text/event-stream');
    expect(logged.notifications.map((n) => (n['params'] as { level: string }).level)).toEqual(['info', 'error']);
    expect({ notifications: logged.notifications, message: logged.message }).toEqual({
      notifications: loggedViaSdk.notifications,
      message: loggedViaSdk.message,
    });
    // Nothing to stream: JSON, log level or not.
    const quiet = await send(sid, call(4, { name: 'echo', arguments: { text: 'quiet' } }));
    expect(quiet.contentType).toContain('application/json');
  });

  it('leaves to the SDK any request that is not plainly valid', async () => {
    const sid = await openLegacySession(gw.url, HEADERS, 'edge-cases');
    const askable = await openLegacySession(gw.url, HEADERS, 'askable-2', { elicitation: {} });
    // Each gets the SDK's own answer, the same in either session; a 200 is the SDK's stream, not a JSON answer of ours.
    const odd: unknown[] = [
      call(2, { name: 'echo', arguments: 'not an object' }),
      call(3, { name: 42 }),
      call(4, { name: 'echo', arguments: { text: 'x' }, task: { ttl: 1000 } }),
      call(5, { name: 'echo', arguments: { text: 'x' }, _meta: { 'io.modelcontextprotocol/related-task': 5 } }),
      call(6, { name: 'echo', arguments: { text: 'x' }, _meta: { progressToken: { not: 'a token' } } }),
      { jsonrpc: '2.0', id: 5.5, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } },
      [call(7, { name: 'echo', arguments: { text: 'batch' } })],
    ];
    for (const message of odd) {
      const here = await send(sid, message);
      const there = await send(askable, message);
      expect({ status: here.status, message: here.message }, JSON.stringify(message)).toEqual({ status: there.status, message: there.message });
      if (here.status === 200) expect(here.contentType, JSON.stringify(message)).toContain('text/event-stream');
    }
    const badVersion = await send(sid, call(8, { name: 'echo', arguments: { text: 'x' } }), { 'mcp-protocol-version': '1999-01-01' });
    expect(badVersion.status).toBe(400);
  });
});

describe('a legacy call that runs past its JSON budget', () => {
  let slowGw: RunningGateway;
  beforeAll(async () => {
    slowGw = await startGateway({
      mcpServers: { legacy: { ...stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog, FIXTURE_CALL_LOG: callLog }), isolation: 'shared' } },
      gateway: { coalesceMs: 0, legacyJsonAnswerMs: 0, apiKeys: [{ principal: 'alice', key: KEY }] },
    });
  });
  afterAll(async () => slowGw?.close());

  const inSession = (sid: string): Record<string, string> => ({ ...HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });

  it('moves to a stream with a resumption id, and a client that lost it resumes with Last-Event-ID and gets the answer once', async () => {
    const sid = await openLegacySession(slowGw.url, HEADERS, 'resumer');
    const dropped = new AbortController();
    const res = await fetch(slowGw.url, {
      method: 'POST',
      headers: inSession(sid),
      signal: dropped.signal,
      body: JSON.stringify(call(21, { name: 'slow', arguments: { id: 'direct-resume', ms: 400 } })),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('mcp-session-id')).toBe(sid);
    const priming = await readSseEvents(res, (e) => e.some((x) => x.id !== undefined));
    dropped.abort();
    const lastId = priming.find((x) => x.id !== undefined)!.id!;
    let resumed!: Response;
    await until('the server to notice the dropped connection', async () => {
      resumed = await fetch(slowGw.url, { headers: { ...inSession(sid), accept: 'text/event-stream', 'last-event-id': lastId } });
      if (resumed.status !== 409) return true;
      await resumed.body?.cancel();
      return false;
    });
    expect(resumed.status).toBe(200);
    const after = await readSseEvents(resumed, (e) => e.some((x) => x.data.includes('"id":21')));
    const answers = after.filter((x) => x.data.includes('"id":21')).map((x) => JSON.parse(x.data) as Record<string, unknown>);
    expect(answers).toEqual([{ jsonrpc: '2.0', id: 21, result: { content: [{ type: 'text', text: 'finished' }] } }]);
  });

  it("serves the SDK v1 client's slow call on that stream", async () => {
    const client = new Client({ name: 'agent', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(slowGw.url), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    const result = await client.callTool({ name: 'slow', arguments: { id: 'direct-v1-slow', ms: 200 } });
    expect(result.content).toEqual([{ type: 'text', text: 'finished' }]);
    await client.close();
  });
});
