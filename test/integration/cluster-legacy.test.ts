/**
 * Legacy sessions across instances: two gateways on one real Redis behind a round-robin balancer (a
 * fetch wrapper that sends each HTTP request of a real SDK v1 client to the other instance). A session
 * id names the instance that holds the session (`<instance>~<uuid>`); a request for it that lands on
 * the other instance is forwarded there and its answer, SSE streams included, passed back. Once the
 * holder is gone, the client is told `Session not found` (and re-initializes).
 */
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { twoInstances } from '../helpers/cluster.js';
import type { RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { postInSession } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
const instances = twoInstances({
  apiKeys: [
    { principal: 'alice', key: ALICE },
    { principal: 'bob', key: BOB },
  ],
});

type Name = 'a' | 'b';
interface Sent {
  readonly to: Name;
  readonly httpMethod: string;
  /** The JSON-RPC method, or 'response' for a client's answer to a server request; '' without a body. */
  readonly rpc: string;
}

/**
 * A round-robin balancer in front of A and B, as a `fetch` for the SDK client: each request goes to the
 * next instance in turn (`plan` first, then alternating), whatever origin the client thinks it talks
 * to. `steer` picks the next one, to make a test's path through the instances certain.
 */
function balancer(plan: Name[] = []) {
  const sent: Sent[] = [];
  let next: Name = 'a';
  const pick = (): Name => {
    const to = plan.shift() ?? next;
    next = to === 'a' ? 'b' : 'a';
    return to;
  };
  const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (input instanceof Request) throw new Error('the balancer takes a URL');
    const to = pick();
    const url = new URL(String(input));
    const target = new URL(instances[to].url);
    url.protocol = target.protocol;
    url.host = target.host;
    let rpc = '';
    if (typeof init?.body === 'string') {
      const body = JSON.parse(init.body) as { method?: string };
      rpc = body.method ?? 'response';
    }
    sent.push({ to, httpMethod: (init?.method ?? 'GET').toUpperCase(), rpc });
    return fetch(url, init);
  };
  return {
    fetch: fetchFn,
    sent,
    steer(to: Name) {
      next = to;
    },
  };
}

/** A v1 client that answers elicitations with `name`. */
function v1Client(name: string): Client {
  const client = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name } }));
  return client;
}

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

/** A raw request for session `sid` on instance `via` (the session's tools/list). */
function inSession(via: RunningGateway, sid: string, key = ALICE): Promise<Response> {
  return postInSession(via.url, sid, 'tools/list', { id: 7, headers: { authorization: `Bearer ${key}` } });
}

describe('legacy sessions across two instances', () => {
  it('serves a streamable-HTTP session whose requests alternate between the instances: initialize, lists, calls, an elicitation mid-call, the GET stream, DELETE', async () => {
    // initialize → A (it holds the session), notifications/initialized → B, the GET stream → B; then in turn.
    const lb = balancer(['a', 'b', 'b']);
    const client = v1Client('Ada');
    const transport = new StreamableHTTPClientTransport(new URL(instances.a.url), {
      fetch: lb.fetch,
      requestInit: { headers: { authorization: `Bearer ${ALICE}` } },
    });
    let listChanged = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void listChanged++);
    await client.connect(transport);
    const sid = transport.sessionId!;
    expect(sid.startsWith('a~')).toBe(true);
    await until('the GET stream', () => lb.sent.some((s) => s.httpMethod === 'GET'));
    expect(lb.sent.find((s) => s.httpMethod === 'GET')?.to).toBe('b');

    expect((await client.listTools()).tools.map((t) => t.name)).toContain('elicit_name');
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');
    // The call through B (its SSE answer, with the elicitation request, streamed back through B), the answer to A ...
    lb.steer('b');
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, Ada!');
    // ... and the call to A, the answer to the elicitation through B.
    lb.steer('a');
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, Ada!');
    // A notification on the session's GET stream, which runs through B.
    await client.callTool({ name: 'trigger_tool_change', arguments: {} });
    await until('tools/list_changed on the GET stream', () => listChanged > 0);

    // The owner authenticates the forwarded key: another principal is told the session does not exist.
    expect((await inSession(instances.b, sid, BOB)).status).toBe(404);

    lb.steer('b');
    await transport.terminateSession();
    const throughB = lb.sent.filter((s) => s.to === 'b');
    expect(throughB.map((s) => `${s.httpMethod} ${s.rpc}`)).toEqual(
      expect.arrayContaining(['POST notifications/initialized', 'GET ', 'POST tools/call', 'POST response', 'DELETE ']),
    );
    // DELETE (through B) ended the session on A.
    expect((await inSession(instances.a, sid)).status).toBe(404);
    await client.close();
  });

  it('serves a 2024-11-05 SSE session: the stream on A, its POSTs alternating between the instances', async () => {
    const lb = balancer(['b']); // initialize through B, then in turn
    const auth = { authorization: `Bearer ${ALICE}` };
    const client = v1Client('Sse');
    const sseUrl = new URL(instances.a.url.replace(/\/mcp$/, '/sse'));
    const transport = new SSEClientTransport(sseUrl, {
      fetch: lb.fetch,
      requestInit: { headers: auth },
      // The stream stays where it opened: on A.
      eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } }) },
    });
    await client.connect(transport);
    const sessionId = (transport as unknown as { _endpoint?: URL })._endpoint?.searchParams.get('sessionId');
    expect(sessionId?.startsWith('a~')).toBe(true);

    expect((await client.listTools()).tools.map((t) => t.name)).toContain('elicit_name');
    lb.steer('a'); // the call to A, the answer to its elicitation through B
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, Sse!');
    lb.steer('b'); // the call through B, the answer to A
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, Sse!');
    expect(lb.sent.filter((s) => s.to === 'b').map((s) => s.rpc)).toEqual(expect.arrayContaining(['initialize', 'tools/call', 'response']));

    // Another principal cannot post into the session, through either instance.
    const foreign = await fetch(instances.b.url.replace(/\/mcp$/, `/messages?sessionId=${encodeURIComponent(sessionId!)}`), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${BOB}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
    });
    expect(foreign.status).toBe(404);
    await client.close();
  });

  it('refuses a GET or DELETE on the internal path without a valid signature (403)', async () => {
    const internal = new URL('/_cluster/forward', instances.a.url);
    const unsigned = await fetch(internal, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'a~x', authorization: `Bearer ${ALICE}` } });
    expect(unsigned.status).toBe(403);
    const forged = await fetch(internal, {
      method: 'DELETE',
      headers: { 'mcp-session-id': 'a~x', 'x-mcpgw-path': '/mcp', 'x-mcpgw-at': String(Date.now()), 'x-mcpgw-signature': '00'.repeat(32) },
    });
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { error: { code: number } }).error.code).toBe(-32600);
  });

  it('tells a client whose session was held by an instance that is gone: 404 Session not found', async () => {
    const lb = balancer(['a']);
    const client = v1Client('Gone');
    const transport = new StreamableHTTPClientTransport(new URL(instances.a.url), {
      fetch: lb.fetch,
      requestInit: { headers: { authorization: `Bearer ${ALICE}` } },
    });
    await client.connect(transport);
    const sid = transport.sessionId!;
    expect(sid.startsWith('a~')).toBe(true);
    expect((await inSession(instances.b, sid)).status).toBe(200); // forwarded while A lives

    await instances.a.close();
    const gone = await inSession(instances.b, sid);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' } });
    // The 2024 message path says the same for a session of A.
    const message = await fetch(instances.b.url.replace(/\/mcp$/, `/messages?sessionId=${encodeURIComponent(`a~${crypto.randomUUID()}`)}`), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ALICE}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(message.status).toBe(404);
    await client.close().catch(() => undefined);
  });
});
