/**
 * The legacy client route: the SDK v1 client (2025-11-25, streamable HTTP sessions, and the 2024-11-05
 * SSE client) on the same paths as the 2026-07-28 endpoint. A legacy backend's mid-call requests reach it
 * as real server→client requests on the call's stream (fronts/legacy/fulfil.ts over the same
 * dispatcher): withdrawn ones are cancelled at the client, refused ones fail the backend's request, and
 * sessions are per principal.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { captureLog } from '../helpers/log.js';
import { fileHas, settlesWithin, until } from '../helpers/until.js';
import { openLegacySession, post, postInSession, readReply, readSseEvents, type SseEvent } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'legacy-route-'));
const cancelLog = join(dir, 'cancel.log');
const callLog = join(dir, 'calls.log');
const BOB = 'bob-key-0123456789abcdefgh';
let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: { ...stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog, FIXTURE_CALL_LOG: callLog }), isolation: 'shared' } },
    gateway: {
      coalesceMs: 0,
      apiKeys: [
        { principal: 'alice', key: ALICE },
        { principal: 'bob', key: BOB },
      ],
    },
  });
});
afterAll(async () => gw?.close());

async function v1Client(key = ALICE): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => ({
    action: 'accept',
    content: { name: `v1-${String(req.params.message).length}`, color: 'blue' },
  }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    content: { type: 'text', text: 'Paris' },
    model: 'm',
    stopReason: 'endTurn',
  }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///v1-root', name: 'root' }] }));
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  return { client, transport };
}
const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;
/**
 * Makes `client` a person who never answers an elicitation: the request stays open until it is
 * cancelled (or 60 s pass, so that nothing is left behind). Returns whether a cancellation arrived.
 */
function neverAnswers(client: Client): () => boolean {
  let cancelled = false;
  client.setRequestHandler(ElicitRequestSchema, async (_req, extra) => {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 60_000);
      extra.signal.addEventListener('abort', () => {
        cancelled = true;
        clearTimeout(t);
        resolve();
      });
    });
    return { action: 'cancel' };
  });
  return () => cancelled;
}

describe('legacy client route (2025-11-25 sessions on /mcp)', () => {
  it("passes a backend's error on with one 'MCP error' prefix, as the client's SDK adds it (never two)", async () => {
    const { client } = await v1Client();
    // A v1 server refuses missing prompt arguments with an McpError, whose wire message already has the prefix.
    const thrown = await client.getPrompt({ name: 'plain_prompt', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(thrown?.message).toMatch(/^MCP error -32602: /);
    expect(thrown?.message).not.toMatch(/MCP error -32602: MCP error/);
    await client.close();
  });

  it('opens a session with initialize and serves lists and plain calls', async () => {
    const { client, transport } = await v1Client();
    expect(transport.sessionId).toBeTruthy();
    expect(client.getServerVersion()?.name).toBe('mcp-mrtr-gateway');
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('echo');
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');
    await client.close();
  });

  it('negotiates the version as the 2025-11-25 spec says: an older supported one is kept, an unknown one gets the latest', async () => {
    const init = async (protocolVersion: string) => {
      const res = await fetch(gw.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${ALICE}` },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion, capabilities: {}, clientInfo: { name: 'v', version: '1' } },
        }),
      });
      const sid = res.headers.get('mcp-session-id');
      const reply = await readReply(res);
      if (sid)
        await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sid, authorization: `Bearer ${ALICE}`, 'mcp-protocol-version': '2025-11-25' } });
      return (reply.message['result'] as { protocolVersion: string }).protocolVersion;
    };
    expect(await init('2025-06-18')).toBe('2025-06-18');
    expect(await init('2025-03-26')).toBe('2025-03-26');
    expect(await init('2024-01-01')).toBe('2025-11-25');
  });

  it('forwards elicitation, sampling and roots natively during a call, over one and two rounds', async () => {
    const { client } = await v1Client();
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, v1-18!');
    expect(text(await client.callTool({ name: 'elicit_two', arguments: {} }))).toBe('v1-13 likes blue');
    expect(text(await client.callTool({ name: 'sample', arguments: { prompt: 'Capital?' } }))).toContain('Paris');
    expect(text(await client.callTool({ name: 'roots', arguments: {} }))).toContain('file:///v1-root');
    await client.close();
  });

  it('cancels at the client an elicitation the backend withdrew, and the call goes on without it', async () => {
    const { client } = await v1Client();
    const cancelled = neverAnswers(client);
    expect(text(await client.callTool({ name: 'elicit_with_timeout', arguments: { ms: 300 } }))).toBe('gave up: -32001');
    // The cancellation, not the 60 s the client would wait otherwise (no elapsed-time bound: a loaded
    // machine is slow, the cancellation is what is asserted).
    await until('the withdrawn elicitation to be cancelled at the client', cancelled);
    await client.close();
  });

  it("passes a client's error for one input request on to the backend's request, as without the gateway", async () => {
    const { client } = await v1Client();
    client.setRequestHandler(ElicitRequestSchema, async () => {
      throw new McpError(ErrorCode.InvalidRequest, 'the user closed the dialog');
    });
    const answer = text(await client.callTool({ name: 'elicit_refused', arguments: {} }));
    expect(answer).toContain('client error -32600');
    expect(answer).toContain('the user closed the dialog');
    await client.close();
  });

  it('checks accepted content against the requested schema, as a 2025 server does: content that does not match fails the backend’s request', async () => {
    const { client } = await v1Client();
    let x: unknown = 7; // the schema asks for a string
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { x } as Record<string, string> }));
    const refused = text(await client.callTool({ name: 'elicit_refused', arguments: {} }));
    expect(refused).toContain('client error -32602');
    expect(refused).toContain('does not match requested schema');
    x = 'ok'; // the same schema again (compiled once, remembered): content that matches goes through
    expect(text(await client.callTool({ name: 'elicit_refused', arguments: {} }))).toBe('got ok');
    await client.close();
  });

  it("relays the call's log lines while the client is still answering its elicitation", async () => {
    const { client } = await v1Client();
    await client.setLoggingLevel('info');
    let logged!: () => void;
    const sawLog = new Promise<void>((resolve) => (logged = resolve));
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
      if (n.params.data === 'still waiting for you') logged();
    });
    client.setRequestHandler(ElicitRequestSchema, async () => {
      // Answers only once the line logged after the request has arrived (a declined answer after 30 s otherwise).
      const seen = await Promise.race([sawLog.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 30_000))]);
      return seen ? { action: 'accept', content: { x: 'after the log' } } : { action: 'decline' };
    });
    expect(text(await client.callTool({ name: 'elicit_while_logging', arguments: {} }))).toBe('got after the log');
    await client.close();
  });

  it('answers with the result of a backend that finished without waiting for its elicitation, and cancels that at the client', async () => {
    const { client } = await v1Client();
    const cancelled = neverAnswers(client);
    expect(text(await client.callTool({ name: 'elicit_or_finish', arguments: { ms: 200 } }))).toBe('finished without you');
    await until('the elicitation to be cancelled at the client', cancelled);
    await client.close();
  });

  it('cancels the backend call at once when the client cancels its request during an elicitation', async () => {
    const { client } = await v1Client();
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    client.setRequestHandler(ElicitRequestSchema, async (_req, extra) => {
      asked();
      await new Promise((resolve) => extra.signal.addEventListener('abort', resolve));
      return { action: 'cancel' };
    });
    const ac = new AbortController();
    const pending = client.callTool({ name: 'elicit_then_slow', arguments: { id: 'cancel-during-elicit' } }, undefined, { signal: ac.signal });
    await wasAsked;
    ac.abort();
    await expect(pending).rejects.toThrow();
    // Not after the requestState's lifetime (10 min here): the deadline below is far shorter.
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled cancel-during-elicit'));
    await client.close();
  });

  it("announces a backend's tools/list_changed to legacy sessions", async () => {
    const { client } = await v1Client();
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void changed++);
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true);
    await client.callTool({ name: 'trigger_tool_change', arguments: {} });
    await until('tools/list_changed at the legacy client', () => changed > 0);
    await client.close();
  });

  it('relays log lines after logging/setLevel', async () => {
    const { client } = await v1Client();
    const lines: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void lines.push(n.params.data));
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'logs', arguments: {} });
    expect(lines.length).toBeGreaterThan(0);
    await client.close();
  });

  /** DELETEs session `sid` as a raw client would, and expects `pending` (a request of it, settled to its value or error) answered at once: the session ended. */
  async function expectEndedByDelete(sid: string, pending: Promise<unknown>): Promise<void> {
    const deleted = await fetch(gw.url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': sid, authorization: `Bearer ${ALICE}`, 'mcp-protocol-version': '2025-11-25' },
    });
    expect(deleted.status).toBe(200);
    await expect(settlesWithin(pending, 15_000)).resolves.toBe('settled');
    expect(String(await pending)).toMatch(/the session ended/);
  }

  it('answers a call in flight when its session is DELETEd (an error on its stream), where its client waited for its own timeout', async () => {
    const { client, transport } = await v1Client();
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { x: 'y' } }));
    const pending = client.callTool({ name: 'elicit_then_wait', arguments: { id: 'deleted-under-it' } }, undefined, { timeout: 120_000 }).then(
      () => 'answered',
      (e: unknown) => e,
    );
    await until('the call to wait past its elicitation', () => fileHas(callLog, 'answered deleted-under-it'));
    // Before: no answer came; the v1 client tried to resume its stream (404) and waited out its timeout.
    await expectEndedByDelete(transport.sessionId!, pending);
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled deleted-under-it'));
    await client.close();
  }, 60_000);

  it('answers a request the SDK server serves when its session is DELETEd (a prompt waiting on its elicitation), where its client waited for its own timeout', async () => {
    const { client, transport } = await v1Client();
    let asked = false;
    const never = new Promise<never>(() => undefined);
    client.setRequestHandler(ElicitRequestSchema, async () => ((asked = true), never)); // the user never answers
    const pending = client.getPrompt({ name: 'ask_prompt' }, { timeout: 120_000 }).then(
      () => 'answered',
      (e: unknown) => e,
    );
    await until('the prompt to ask its client', () => asked);
    // Before: its stream closed unanswered, and the v1 client waited out its timeout.
    await expectEndedByDelete(transport.sessionId!, pending);
    await client.close();
  }, 60_000);

  it("keeps sessions per principal: another principal's session id is not found; DELETE ends a session", async () => {
    const { client, transport } = await v1Client();
    const sid = transport.sessionId!;
    const inSession = (key: string) =>
      fetch(gw.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sid,
          authorization: `Bearer ${key}`,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
      });
    const foreign = await inSession(BOB);
    expect(foreign.status).toBe(404);
    await transport.terminateSession();
    const after = await inSession(ALICE);
    expect(after.status).toBe(404);
    await client.close();
  });

  it('leaves 2026-07-28 clients on the stateless front, and GET without a session is still 405', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(r.message['result']).toMatchObject({ resultType: 'complete' });
    const get = await fetch(gw.url, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(get.status).toBe(405);
    const noSession = await fetch(gw.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${ALICE}`,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'tools/list', params: {} }),
    });
    expect(noSession.status).toBe(400); // a 2025-era request without a session
    const refusal = ((await noSession.json()) as { error: { code: number; message: string; data: { supported: string[] } } }).error;
    expect(refusal.code).toBe(-32022);
    expect(refusal.message).toMatch(/initialize/);
    expect(refusal.data.supported).toEqual(['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
  });
});

describe('legacy sessions: SSE resumption', () => {
  const base = (sid?: string): Record<string, string> => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${ALICE}`,
    ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } : {}),
  });
  type Event = { id: string | undefined; message: Record<string, unknown> };
  /** The messages among SSE events (a priming event carries none). */
  const messagesOf = (events: SseEvent[]): Event[] =>
    events.filter((e) => e.data).map((e) => ({ id: e.id, message: JSON.parse(e.data) as Record<string, unknown> }));
  /** Reads SSE events from `res` until `stop` says so; returns their messages. */
  const readEvents = async (res: Response, stop: (events: Event[]) => boolean): Promise<Event[]> =>
    messagesOf(await readSseEvents(res, (events) => stop(messagesOf(events))));

  it('replays what followed a dropped stream after Last-Event-ID, nothing lost and nothing twice', async () => {
    const sid = await openLegacySession(gw.url, base());
    const dropped = new AbortController();
    const call = await fetch(gw.url, {
      method: 'POST',
      headers: base(sid),
      signal: dropped.signal,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'progress', arguments: { steps: 6, gapMs: 80 }, _meta: { progressToken: 'p' } },
      }),
    });
    expect(call.headers.get('content-type')).toContain('text/event-stream');
    const before = await readEvents(call, (e) => e.length >= 2);
    dropped.abort();
    expect(before.every((e) => e.id !== undefined)).toBe(true);
    // Until the server has noticed the dropped connection the stream is still "open" (409); a client retries.
    let resumed!: Response;
    await until('the server to notice the dropped connection', async () => {
      resumed = await fetch(gw.url, { headers: { ...base(sid), accept: 'text/event-stream', 'last-event-id': before[before.length - 1]!.id! } });
      if (resumed.status !== 409) return true;
      await resumed.body?.cancel();
      return false;
    });
    expect(resumed.status).toBe(200);
    const after = await readEvents(resumed, (e) => e.some((x) => x.message['id'] === 2));
    const progress = [...before, ...after]
      .filter((e) => e.message['method'] === 'notifications/progress')
      .map((e) => (e.message['params'] as { progress: number }).progress);
    expect(progress).toEqual([1, 2, 3, 4, 5, 6]);
    expect(after.filter((e) => e.message['id'] === 2)).toHaveLength(1);
    expect(after.find((e) => e.message['id'] === 2)!.message['result']).toMatchObject({ content: [{ text: 'done 6' }] });
    const ids = [...before, ...after].map((e) => e.id!);
    expect([...ids].sort()).toEqual(ids); // event ids sort in the order they were sent
    // Another session cannot resume from these ids.
    const other = await v1Client();
    const foreign = await fetch(gw.url, { headers: { ...base(other.transport.sessionId), accept: 'text/event-stream', 'last-event-id': ids[0]! } });
    expect(foreign.status).not.toBe(200);
    await foreign.body?.cancel();
    await other.client.close();
  });

  it('replays after an old event that is still kept, and answers a clear 400 (never 500) for one older than what the session keeps', async () => {
    const sid = await openLegacySession(gw.url, base());
    // 600 progress notifications (a few may be merged on the way) and the result on one stream: more than the 256 events a stream keeps.
    const call = await fetch(gw.url, {
      method: 'POST',
      headers: base(sid),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'progress', arguments: { steps: 600, gapMs: 0 }, _meta: { progressToken: 'p' } },
      }),
    });
    const all = await readEvents(call, (e) => e.some((x) => x.message['id'] === 2));
    expect(all.length).toBeGreaterThan(270);
    const resume = (lastEventId: string) => fetch(gw.url, { headers: { ...base(sid), accept: 'text/event-stream', 'last-event-id': lastEventId } });

    // Old, but everything after it is still kept: what followed is replayed, the result included.
    const kept = await resume(all[all.length - 11]!.id!);
    expect(kept.status).toBe(200);
    const replayed = await readEvents(kept, (e) => e.some((x) => x.message['id'] === 2));
    expect(replayed.map((e) => e.id)).toEqual(all.slice(-10).map((e) => e.id));

    // Older than what is kept: a JSON-RPC error that says so and how much is kept.
    const tooOld = await resume(all[0]!.id!);
    expect(tooOld.status).toBe(400);
    const error = ((await tooOld.json()) as { error: { code: number; message: string; data: Record<string, unknown> } }).error;
    expect(error.message).toMatch(/older than what this session keeps/);
    expect(error.data).toMatchObject({ reason: 'last_event_id_too_old', keptPerStream: 256 });

    // An id this session never gave: 400 as well, said differently.
    const unknown = await resume('999999999999.nowhere');
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { data: Record<string, unknown> } }).error.data).toMatchObject({ reason: 'last_event_id_unknown' });
    await fetch(gw.url, { method: 'DELETE', headers: base(sid) });
  });
});

describe('the 2024-11-05 HTTP+SSE transport on /sse', () => {
  it('serves the oldest clients: lists, calls, and a backend elicitation forwarded natively', async () => {
    const client = new Client({ name: 'old-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Sse' } }));
    const auth = { authorization: `Bearer ${ALICE}` };
    const transport = new SSEClientTransport(new URL(gw.url.replace(/\/mcp$/, '/sse')), {
      requestInit: { headers: auth },
      eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } }) },
    });
    await client.connect(transport);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('elicit_name');
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, Sse!');
    // Another principal cannot post into this session.
    const sessionId = (transport as unknown as { _endpoint?: URL })._endpoint?.searchParams.get('sessionId');
    expect(sessionId).toBeTruthy();
    const foreign = await fetch(gw.url.replace(/\/mcp$/, `/messages?sessionId=${sessionId}`), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${BOB}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
    });
    expect(foreign.status).toBe(404);
    // Its own principal, with a body that is not JSON or not a JSON-RPC message: refused where it is sent, not dropped.
    const send = (contentType: string, body: string) =>
      fetch(gw.url.replace(/\/mcp$/, `/messages?sessionId=${sessionId}`), { method: 'POST', headers: { 'content-type': contentType, ...auth }, body });
    const plain = await send('text/plain', JSON.stringify({ jsonrpc: '2.0', id: 100, method: 'tools/list', params: {} }));
    expect(plain.status).toBe(415);
    const notRpc = await send('application/json', '{"foo":1}');
    expect([notRpc.status, ((await notRpc.json()) as { error: { code: number } }).error.code]).toEqual([400, -32600]);
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, Sse!'); // the session goes on
    await client.close();
  });
});

describe('legacy sessions: cancellation and idle cleanup', () => {
  it('cancels the backend call when the legacy client cancels its request', async () => {
    const { client } = await v1Client();
    const ac = new AbortController();
    const pending = client.callTool({ name: 'slow', arguments: { id: 'legacy-cancel', ms: 60_000 } }, undefined, { signal: ac.signal });
    await until('the slow call to reach the backend', () => fileHas(callLog, 'started legacy-cancel'));
    ac.abort();
    await expect(pending).rejects.toThrow();
    await until('the backend call to be cancelled', () => fileHas(cancelLog, 'cancelled legacy-cancel'));
    await client.close();
  });

  it('opens the sampling circuit breaker after three failed sampling requests, refuses with -32000 while open, and closes after a good probe', async () => {
    const short = await startGateway({
      mcpServers: { legacy: stdioFixture() },
      gateway: { coalesceMs: 0, sampling: { failureThreshold: 3, openMs: 500 } },
    });
    try {
      const client = new Client({ name: 'flaky-llm', version: '1' }, { capabilities: { sampling: {} } });
      let asked = 0;
      let healthy = false;
      client.setRequestHandler(CreateMessageRequestSchema, async () => {
        asked++;
        if (!healthy) throw new McpError(ErrorCode.InternalError, 'model overloaded');
        return { role: 'assistant', content: { type: 'text', text: 'fine' }, model: 'm', stopReason: 'endTurn' };
      });
      await client.connect(new StreamableHTTPClientTransport(new URL(short.url)));
      const sample = async () => text(await client.callTool({ name: 'sample', arguments: { prompt: 'p' } }));
      for (let i = 0; i < 3; i++) expect(await sample()).toContain('model overloaded');
      expect(asked).toBe(3);
      // Open: refused at once, the client is not asked.
      const refused = await sample();
      expect(refused).toContain('-32000');
      expect(refused).toContain('Sampling is unavailable');
      expect(asked).toBe(3);
      // After openMs one probe goes through; its success closes the breaker.
      healthy = true;
      let answer = refused;
      await until('a probe to close the breaker', async () => (answer = await sample()).includes('LLM: fine'));
      expect(answer).toBe('LLM: fine');
      expect(await sample()).toBe('LLM: fine');
      await client.close();
    } finally {
      await short.close();
    }
  });

  it('closes a session idle past legacySessionIdleMs (short TTL)', async () => {
    const log = captureLog();
    const short = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { legacySessionIdleMs: 1_000 } }, { logger: log.logger });
    try {
      const client = new Client({ name: 'idle', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(short.url));
      await client.connect(transport);
      const sid = transport.sessionId!;
      const ask = () => postInSession(short.url, sid, 'ping', { id: 5 });
      expect((await ask()).status).toBe(200);
      // The client goes quiet: its GET stream closed (a session with an open stream is at work, never
      // idle), no DELETE. Idle past the TTL, the sweeper (every half second here) closes it (any
      // request would keep it, so the test watches the log rather than asking).
      await client.close().catch(() => undefined);
      await until('the idle session to be closed', () => log.has('legacy session idle: closed'));
      expect((await ask()).status).toBe(404);
    } finally {
      await short.close();
    }
  });
});

describe('legacy sessions: a malformed request', () => {
  it("is told what is wrong in one line, not the SDK's zod dump", async () => {
    const { client, transport } = await v1Client();
    try {
      const res = await postInSession(gw.url, transport.sessionId!, 'tools/call', { id: 9, headers: { authorization: `Bearer ${ALICE}` } }); // params {}: no name
      const text = await res.text();
      expect(text).toContain('Invalid tools/call request: params.name: Invalid input: expected string, received undefined');
      expect(text).not.toContain('invalid_type');
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});

describe('legacy sessions: a session at work is not idle', () => {
  it('lets a call run past legacySessionIdleMs to its answer, and the session serve the next one', async () => {
    const log = captureLog();
    const short = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { legacySessionIdleMs: 1_000 } }, { logger: log.logger });
    try {
      const client = new Client({ name: 'long-call', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(short.url)));
      // A call of 3 s, three sweeps (every 0.5 s past 1 s) while it runs: its session stays.
      expect(await client.callTool({ name: 'slow', arguments: { id: 'long', ms: 3_000 } })).toMatchObject({ content: [{ text: 'finished' }] });
      expect(await client.callTool({ name: 'echo', arguments: { text: 'after' } })).toMatchObject({ content: [{ text: 'after' }] });
      expect(log.has('legacy session idle: closed')).toBe(false);
      await client.close().catch(() => undefined);
    } finally {
      await short.close();
    }
  });
});

describe('legacy sessions: resource subscriptions', () => {
  it('relays resources/subscribe to the owning backend and its updates to the subscribed session only', async () => {
    const { startLegacyEverything } = await import('../../spec/fixtures/legacy-everything/http.js');
    const backend = await startLegacyEverything();
    const gwe = await startGateway({ mcpServers: { everything: { url: backend.url } } });
    try {
      const connect = async () => {
        const client = new Client({ name: 'sub', version: '1' });
        const updates: string[] = [];
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updates.push(n.params.uri));
        await client.connect(new StreamableHTTPClientTransport(new URL(gwe.url)));
        return { client, updates };
      };
      const [watcher, bystander] = [await connect(), await connect()];
      expect(watcher.client.getServerCapabilities()?.resources?.subscribe).toBe(true);
      await watcher.client.subscribeResource({ uri: 'test://watched-resource' });
      // The bystander would have had the update by the time the watcher has it (the same backend
      // notification, relayed at once): the watcher's is the barrier of that negative check.
      await until('the update at the subscribed session', () => watcher.updates.length > 0);
      expect(watcher.updates).toEqual(['test://watched-resource']);
      expect(bystander.updates).toEqual([]);
      await watcher.client.unsubscribeResource({ uri: 'test://watched-resource' });
      await watcher.client.close();
      await bystander.client.close();
    } finally {
      await gwe.close();
      await backend.close();
    }
  });
});

describe('legacy sessions in front of the demo backend (what `npm start` serves)', () => {
  it('opens sessions even though the backend offers only some capabilities (no completions), over /mcp and /sse', async () => {
    const { demoConfigFile } = await import('../../src/demo/demo-config.js');
    const demo = await startGateway(demoConfigFile() as Record<string, unknown>);
    try {
      const viaHttp = new Client({ name: 'host', version: '1' });
      await viaHttp.connect(new StreamableHTTPClientTransport(new URL(demo.url)));
      expect(viaHttp.getServerCapabilities()?.completions).toBeUndefined();
      expect((await viaHttp.listTools()).tools.map((t) => t.name)).toContain('echo');
      expect(text(await viaHttp.callTool({ name: 'echo', arguments: { text: 'demo' } }))).toBe('demo');
      await viaHttp.close();
      const viaSse = new Client({ name: 'old-host', version: '1' });
      await viaSse.connect(new SSEClientTransport(new URL(demo.url.replace(/\/mcp$/, '/sse'))));
      expect(text(await viaSse.callTool({ name: 'echo', arguments: { text: 'old' } }))).toBe('old');
      await viaSse.close();
    } finally {
      await demo.close();
    }
  });
});
