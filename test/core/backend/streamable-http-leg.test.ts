/** The backend leg over streamable HTTP, against a scripted server on 127.0.0.1 (real sockets, real HTTP). */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { CALL_ID_META, RELATED_CALL_META } from '../../../src/core/backend/call-tags.js';
import { harmlessTwice, StreamableHttpLeg } from '../../../src/core/backend/streamable-http-leg.js';
import { until } from '../../helpers/until.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

const servers: Server[] = [];
const legs: StreamableHttpLeg[] = [];

async function serve(handler: Handler): Promise<URL> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => handler(req, body, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
}

async function legTo(
  url: URL,
  extra: Partial<ConstructorParameters<typeof StreamableHttpLeg>[0]> = {},
): Promise<{ leg: StreamableHttpLeg; got: JSONRPCMessage[] }> {
  const leg = new StreamableHttpLeg({ url, headers: { 'x-entry': 'yes' }, ...extra });
  legs.push(leg);
  const got: JSONRPCMessage[] = [];
  leg.onmessage = (m) => got.push(m);
  leg.onerror = () => undefined;
  await leg.start();
  return { leg, got };
}

const sseHead = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const event = (msg: unknown, id?: string): string => `${id ? `id: ${id}\n` : ''}data: ${JSON.stringify(msg)}\n\n`;
const call = (id: number, callId?: string): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 't', ...(callId ? { _meta: { [CALL_ID_META]: callId } } : {}) } }) as JSONRPCMessage;
const metaOf = (m: JSONRPCMessage | undefined): Record<string, unknown> | undefined =>
  (m as { params?: { _meta?: Record<string, unknown> } } | undefined)?.params?._meta;

afterEach(async () => {
  await Promise.all(legs.splice(0).map((l) => l.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => (s.closeAllConnections(), s.close(r)))));
});

describe('the streamable HTTP backend leg', () => {
  it("takes the call id off the request and tags the requests and notifications of that call's stream, in arrival order", async () => {
    let sent: Record<string, unknown> = {};
    let headers: IncomingMessage['headers'] = {};
    const url = await serve((req, body, res) => {
      sent = JSON.parse(body) as Record<string, unknown>;
      headers = req.headers;
      res.writeHead(200, { ...sseHead, 'mcp-session-id': 's-1' });
      // One write in awkward pieces: an event split across chunks, two events in one.
      const text =
        event({ jsonrpc: '2.0', id: 7, method: 'elicitation/create', params: { message: 'x' } }) +
        event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } }) +
        event({ jsonrpc: '2.0', id: 1, result: {} });
      for (let i = 0; i < text.length; i += 17) res.write(text.slice(i, i + 17));
      res.end();
    });
    const { leg, got } = await legTo(url);
    leg.setProtocolVersion('2025-11-25');
    await leg.send(call(1, 'call-1'));
    await until('three messages', () => got.length === 3);
    expect(sent).toEqual({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't' } });
    expect(headers).toMatchObject({ 'x-entry': 'yes', 'mcp-protocol-version': '2025-11-25', accept: 'application/json, text/event-stream' });
    expect(metaOf(got[0])?.[RELATED_CALL_META]).toBe('call-1');
    expect(metaOf(got[1])?.[RELATED_CALL_META]).toBe('call-1');
    expect(got[2]).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(leg.sessionId).toBe('s-1');
  });

  it('reads an event whose data spans several lines, and removes a tag the backend wrote itself on an untagged stream', async () => {
    const forged = { jsonrpc: '2.0', id: 9, method: 'elicitation/create', params: { message: 'x', _meta: { [RELATED_CALL_META]: 'someone-else' } } };
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, sseHead);
      // Pretty-printed JSON, one `data:` line per line of it: the lines join with newlines.
      const lines = JSON.stringify(forged, null, 2).split('\n');
      res.end(`event: message\n${lines.map((l) => `data: ${l}`).join('\n')}\n\n${event({ jsonrpc: '2.0', id: 1, result: {} })}`);
    });
    const { leg, got } = await legTo(url);
    await leg.send(call(1));
    await until('both messages', () => got.length === 2);
    expect(got[0]).toMatchObject({ id: 9, method: 'elicitation/create', params: { message: 'x' } });
    expect(metaOf(got[0])?.[RELATED_CALL_META]).toBeUndefined();
  });

  it('tells of a call whose stream ended before its response (not resumable without event ids)', async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, sseHead);
      res.end(event({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }));
    });
    const lost: [string, boolean][] = [];
    const { leg } = await legTo(url, { onStreamLost: (c, r) => lost.push([c, r]) });
    await leg.send(call(1, 'call-9'));
    await until('the loss reported', () => lost.length === 1);
    expect(lost).toEqual([['call-9', false]]);
  });

  it('resumes a response stream that broke after an event id with Last-Event-ID, and the response arrives tagged for its call', async () => {
    const gets: (string | undefined)[] = [];
    const url = await serve((req, _body, res) => {
      if (req.method === 'GET') {
        const last = req.headers['last-event-id'] as string | undefined;
        gets.push(last);
        if (last !== 'e1') return void res.writeHead(405).end();
        res.writeHead(200, sseHead);
        res.end(event({ jsonrpc: '2.0', id: 3, method: 'roots/list' }, 'e2') + event({ jsonrpc: '2.0', id: 1, result: { ok: true } }, 'e3'));
        return;
      }
      res.writeHead(200, sseHead);
      // The connection drops before the response, once the first event is out.
      res.write(event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } }, 'e1'), () => res.destroy());
    });
    const lost: [string, boolean][] = [];
    const { leg, got } = await legTo(url, { onStreamLost: (c, r) => lost.push([c, r]) });
    await leg.send(call(1, 'call-2'));
    await until('the resumed response', () => got.some((m) => 'result' in m), 5_000);
    expect(lost).toEqual([['call-2', true]]);
    expect(gets).toContain('e1');
    const roots = got.find((m) => 'method' in m && m.method === 'roots/list');
    expect(metaOf(roots)?.[RELATED_CALL_META]).toBe('call-2');
  });

  it('answers a 401 with one more try on a new token, and sends the bearer token, never a client header', async () => {
    const auths: (string | undefined)[] = [];
    const url = await serve((req, _body, res) => {
      auths.push(req.headers.authorization);
      if (req.headers.authorization !== 'Bearer t2') return void res.writeHead(401).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} }));
    });
    let n = 0;
    const refused: string[] = [];
    const credentials = { token: async () => `t${++n}`, refused: (t: string) => void refused.push(t), close: () => undefined };
    const { leg, got } = await legTo(url, { credentials });
    await leg.send(call(1));
    expect(auths).toEqual(['Bearer t1', 'Bearer t2']);
    expect(refused).toEqual(['t1']);
    expect(got).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
  });

  it('follows a redirect within the origin (method and body kept), and refuses an error status with its code', async () => {
    const url = await serve((req, body, res) => {
      if (req.url === '/mcp') return void res.writeHead(307, { location: '/mcp/' }).end();
      if (req.url === '/mcp/' && body) return void res.writeHead(404).end('unknown session');
      res.writeHead(500).end();
    });
    const { leg } = await legTo(url);
    await expect(leg.send(call(1))).rejects.toMatchObject({ code: 404, message: expect.stringContaining('unknown session') });
  });

  it('is ready only once its standalone stream is open: a request the backend sends on it right away arrives', async () => {
    let opened = false;
    const url = await serve((req, _body, res) => {
      if (req.method === 'POST') return void res.writeHead(202).end();
      // A slow GET: the initialized notification's send waits for it.
      setTimeout(() => {
        opened = true;
        res.writeHead(200, sseHead);
        res.write(event({ jsonrpc: '2.0', id: 5, method: 'roots/list' }));
      }, 100);
    });
    const { leg, got } = await legTo(url);
    await leg.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
    expect(opened).toBe(true);
    await until('the request on the standalone stream', () => got.length === 1);
    expect(got[0]).toMatchObject({ id: 5, method: 'roots/list' });
  });

  it('ends open response streams on close, and sends nothing after', async () => {
    let open = 0;
    const url = await serve((_req, _body, res) => {
      open += 1;
      res.writeHead(200, sseHead);
      res.write(': parked\n\n');
      res.on('close', () => (open -= 1));
    });
    const lost: string[] = [];
    const { leg } = await legTo(url, { onStreamLost: (c) => lost.push(c) });
    let closed = false;
    leg.onclose = () => (closed = true);
    await Promise.all([leg.send(call(1, 'a')), leg.send(call(2, 'b'))]);
    expect(open).toBe(2);
    await leg.close();
    expect(closed).toBe(true);
    await until('the server saw both streams end', () => open === 0);
    expect(lost).toEqual([]); // closing is not a loss
    await expect(leg.send(call(3))).rejects.toThrow('Not connected');
  });

  it('may send again after a reset (http-exchange.ts) reads, responses and notifications, never a tool call or an unknown request', () => {
    const request = (method: string): JSONRPCMessage => ({ jsonrpc: '2.0', id: 1, method }) as JSONRPCMessage;
    for (const method of ['initialize', 'tools/list', 'resources/read', 'prompts/get', 'tasks/get']) expect(harmlessTwice(request(method))).toBe(true);
    expect(harmlessTwice({ jsonrpc: '2.0', id: 1, result: { action: 'accept' } } as JSONRPCMessage)).toBe(true);
    expect(harmlessTwice({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } } as JSONRPCMessage)).toBe(true);
    expect(harmlessTwice(call(1))).toBe(false);
    expect(harmlessTwice(request('x-vendor/charge'))).toBe(false);
  });
});
