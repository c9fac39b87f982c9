/**
 * The 2026-07-28 front door: server/discover, per-request `_meta`, versions, SEP-2243 headers,
 * Origin/Host, HTTP statuses fixed by the spec, notifications, logs by logLevel, healthz.
 * Driven in process (`gateway.fetch(new Request(…))`): none of this needs a socket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { captureLog } from '../helpers/log.js';
import {
  assertWireNotification,
  assertWireResponse,
  inProcess,
  META_CAPS,
  META_VERSION,
  post as postOver,
  readReply,
  type PostOptions,
} from '../helpers/wire.js';

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { instructions: 'test gateway' } });
});
afterAll(async () => gw?.close());

/** Sends straight to the gateway's fetch handler. */
const fetch = (url: string | URL, init?: RequestInit): Promise<Response> => inProcess(gw.gateway)(url, init);
const post = (url: string, method: string, params: Record<string, unknown> = {}, opts: PostOptions = {}) => postOver(url, method, params, { ...opts, fetch });

const headers = (method: string, extra: Record<string, string> = {}): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': method,
  ...extra,
});
const meta = { [META_VERSION]: '2026-07-28', [META_CAPS]: {} };

async function raw(body: unknown, h: Record<string, string>, method = 'POST') {
  const res = await fetch(gw.url, { method, headers: h, ...(method === 'POST' ? { body: JSON.stringify(body) } : {}) });
  return readReply(res);
}

describe('2026-07-28 front door', () => {
  it('implements server/discover with supportedVersions, capabilities, serverInfo and cache hints', async () => {
    const r = await post(gw.url, 'server/discover');
    assertWireResponse('server/discover', r.message);
    expect(r.message['result']).toMatchObject({
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: {}, prompts: {}, resources: {}, completions: {}, logging: {} },
      instructions: 'test gateway',
      resultType: 'complete',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mcp-mrtr-gateway' } },
      cacheScope: 'private',
    });
  });

  it('stamps resultType and cache hints on every list and read result', async () => {
    for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
      const r = await post(gw.url, method);
      expect(r.status).toBe(200);
      assertWireResponse(method, r.message);
    }
    const read = await post(gw.url, 'resources/read', { uri: 'test://static' });
    assertWireResponse('resources/read', read.message);
    expect(read.message['result']).toMatchObject({ contents: [{ text: 'static text' }], ttlMs: 10_000 });
    const tpl = await post(gw.url, 'resources/read', { uri: 'test://item/42' });
    expect(tpl.message['result']).toMatchObject({ contents: [{ text: 'item 42' }] });
  });

  it('lists tools in the same order every time', async () => {
    const names = async () => ((await post(gw.url, 'tools/list')).message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
    const first = await names();
    expect(first).toContain('elicit_name');
    expect(await names()).toEqual(first);
    expect(await names()).toEqual(first);
  });

  it('answers unknown tools and resources with -32602 (with data.uri for resources)', async () => {
    const t = await post(gw.url, 'tools/call', { name: 'nope', arguments: {} });
    assertWireResponse('tools/call', t.message);
    expect(t.message['error']).toMatchObject({ code: -32602 });
    const r = await post(gw.url, 'resources/read', { uri: 'test://missing' });
    assertWireResponse('resources/read', r.message);
    expect(r.message['error']).toMatchObject({ code: -32602, data: { uri: 'test://missing' } });
  });

  it('rejects params that do not fit the method with -32602', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'echo', arguments: 'not-an-object' });
    assertWireResponse('tools/call', r.message);
    expect(r.message['error']).toMatchObject({ code: -32602 });
    const p = await post(gw.url, 'prompts/get', { name: 'plain_prompt', arguments: { topic: 5 } });
    expect(p.message['error']).toMatchObject({ code: -32602 });
  });

  it('serves prompts/get and completion/complete', async () => {
    const p = await post(gw.url, 'prompts/get', { name: 'plain_prompt', arguments: { topic: 'owls' } });
    assertWireResponse('prompts/get', p.message);
    expect(JSON.stringify(p.message['result'])).toContain('About owls');
    const c = await post(gw.url, 'completion/complete', { ref: { type: 'ref/prompt', name: 'plain_prompt' }, argument: { name: 'topic', value: 'o' } });
    assertWireResponse('completion/complete', c.message);
    expect(c.message['result']).toMatchObject({ completion: { values: ['owls', 'otters'] }, resultType: 'complete' });
  });

  it('rejects missing _meta fields with -32602 and HTTP 400', async () => {
    for (const params of [{}, { _meta: { [META_CAPS]: {} } }, { _meta: { [META_VERSION]: '2026-07-28' } }]) {
      const r = await raw({ jsonrpc: '2.0', id: 1, method: 'server/discover', params }, headers('server/discover'));
      expect(r.status).toBe(400);
      expect(r.message['error']).toMatchObject({ code: -32602 });
      expect(r.message['id']).toBe(1);
    }
  });

  it('answers an unsupported version with -32022, HTTP 400 and the supported list', async () => {
    const r = await raw(
      { jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: { ...meta, [META_VERSION]: 'v999.0.0' } } },
      headers('server/discover', { 'mcp-protocol-version': 'v999.0.0' }),
    );
    expect(r.status).toBe(400);
    expect(r.message['error']).toMatchObject({ code: -32022, data: { supported: ['2026-07-28'], requested: 'v999.0.0' } });
  });

  it('answers header/body disagreements with -32020 and HTTP 400', async () => {
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [{ method: 'server/discover', params: { _meta: { ...meta, [META_VERSION]: 'v999.0.0' } } }, headers('server/discover')],
      [{ method: 'tools/list', params: { _meta: meta } }, headers('prompts/list')],
      [{ method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' }, _meta: meta } }, headers('tools/call', { 'mcp-name': 'other' })],
      [{ method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' }, _meta: meta } }, headers('tools/call')],
    ];
    for (const [body, h] of cases) {
      const r = await raw({ jsonrpc: '2.0', id: 3, ...body }, h);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.message['error']).toMatchObject({ code: -32020 });
    }
    const { 'mcp-method': _drop, ...noMethod } = headers('tools/list');
    const r = await raw({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: meta } }, noMethod);
    expect(r.message['error']).toMatchObject({ code: -32020 });
  });

  it('decodes base64-encoded Mcp-Name values before comparing', async () => {
    const name = 'echo';
    const encoded = `=?base64?${Buffer.from(name).toString('base64')}?=`;
    const r = await raw(
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name, arguments: { text: 'b64' }, _meta: meta } },
      headers('tools/call', { 'mcp-name': encoded }),
    );
    expect(r.message['result']).toMatchObject({ content: [{ text: 'b64' }] });
  });

  it('answers removed and unknown methods with -32601 and HTTP 404', async () => {
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'unknown/method', 'tasks/result']) {
      const r = await raw({ jsonrpc: '2.0', id: 6, method, params: { _meta: meta } }, headers(method));
      expect(r.status, method).toBe(404);
      expect(r.message['error']).toMatchObject({ code: -32601 });
      expect(r.message['id']).toBe(6);
    }
  });

  it('opens a legacy session for a 2025-era initialize, and refuses one in the 2026-07-28 envelope (-32601, 404)', async () => {
    const r = await raw(
      { jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } },
      { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    );
    expect(r.status).toBe(200);
    expect(r.headers.get('mcp-session-id')).toBeTruthy();
    expect(r.message['result']).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { name: 'mcp-mrtr-gateway' } });
    const modern = await raw({ jsonrpc: '2.0', id: 8, method: 'initialize', params: { _meta: meta } }, headers('initialize'));
    expect(modern.status).toBe(404);
    expect(modern.message['error']).toMatchObject({ code: -32601 });
  });

  it('answers GET and DELETE with 405, notifications with 202, bad JSON with -32700', async () => {
    expect((await fetch(gw.url)).status).toBe(405);
    expect((await fetch(gw.url, { method: 'DELETE' })).status).toBe(405);
    const n = await fetch(gw.url, {
      method: 'POST',
      headers: headers('notifications/cancelled'),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: meta } }),
    });
    expect(n.status).toBe(202);
    const bad = await fetch(gw.url, { method: 'POST', headers: headers('tools/list'), body: '{not json' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it('refuses a message nested more than 128 levels deep with -32602 under its id and HTTP 400, wherever the nesting is (never a 500)', async () => {
    // Written as text: JSON.stringify itself recurses.
    const NESTED = '@nested@';
    const nested = (levels: number): string => '{"a":'.repeat(levels) + '{}' + '}'.repeat(levels);
    const call = (params: Record<string, unknown>, levels: number) =>
      fetch(gw.url, {
        method: 'POST',
        headers: headers('tools/call', { 'mcp-name': 'echo' }),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, ...params } }).replace(
          `"${NESTED}"`,
          nested(levels),
        ),
      });
    for (const [params, levels] of [
      [{ _meta: { ...meta, x: NESTED } }, 5_000],
      [{ _meta: { ...meta, [META_CAPS]: { elicitation: NESTED } } }, 2_000],
      [{ _meta: meta, arguments: { text: 'x', deep: NESTED } }, 200],
    ] as const) {
      const res = await call(params, levels);
      expect(res.status, `nested ${levels} deep`).toBe(400);
      expect(await res.json()).toMatchObject({ id: 1, error: { code: -32602, message: expect.stringMatching(/nests deeper than 128/) } });
    }
    // Deep, but within the bound: served.
    const within = await call({ _meta: meta, arguments: { text: 'x', deep: NESTED } }, 100);
    expect(within.status).toBe(200);
  });

  it("answers a browser's CORS preflight for an accepted Origin, and lets that page read the answer; a foreign Origin gets 403 and no CORS header", async () => {
    const preflight = (origin: string | undefined) =>
      fetch(gw.url, {
        method: 'OPTIONS',
        headers: {
          ...(origin ? { origin } : {}),
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, mcp-protocol-version, mcp-method, mcp-param-region',
        },
      });
    const ok = await preflight('http://localhost:3000');
    expect(ok.status).toBe(204);
    expect(
      Object.fromEntries(
        ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'allow'].map((h) => [h, ok.headers.get(h)]),
      ),
    ).toEqual({
      'access-control-allow-origin': 'http://localhost:3000',
      'access-control-allow-methods': 'GET,POST,DELETE',
      'access-control-allow-headers': 'content-type,mcp-protocol-version,mcp-method,mcp-param-region',
      allow: 'GET, POST, DELETE',
    });
    expect(ok.headers.get('vary')).toMatch(/Origin/);
    const foreign = await preflight('http://evil.example.com');
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    // No Origin (not a browser): an OPTIONS is answered with what the path takes, nothing else.
    const plain = await preflight(undefined);
    expect([plain.status, plain.headers.get('allow'), plain.headers.get('access-control-allow-origin')]).toEqual([204, 'GET, POST, DELETE', null]);
    const body = { jsonrpc: '2.0', id: 9, method: 'server/discover', params: { _meta: meta } };
    const read = await raw(body, headers('server/discover', { origin: 'http://localhost:3000' }));
    expect([read.status, read.headers.get('access-control-allow-origin')]).toEqual([200, 'http://localhost:3000']);
    expect(read.headers.get('access-control-expose-headers')).toMatch(/mcp-session-id/);
    expect((await raw(body, headers('server/discover'))).headers.get('access-control-allow-origin')).toBeNull();
    // Another method on a served path: 405 naming what the path takes, not a 404 that names the path among those served.
    const purge = await fetch(gw.url, { method: 'PURGE' });
    expect([purge.status, purge.headers.get('allow')]).toEqual([405, 'GET, POST, DELETE']);
    const postHealth = await fetch(new URL('/healthz', gw.url), { method: 'POST', body: '{}' });
    expect([postHealth.status, postHealth.headers.get('allow')]).toEqual([405, 'GET']);
  });

  it('lets a configured Origin read the answers only as configured (scheme, host and port), where the gate compares hostnames', async () => {
    const strict = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { allowedOrigins: ['https://app.example.com'] } });
    try {
      const ask = (origin: string) =>
        inProcess(strict.gateway)(strict.url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
      const exact = await ask('https://app.example.com');
      expect([exact.status, exact.headers.get('access-control-allow-origin')]).toEqual([204, 'https://app.example.com']);
      const otherPort = await ask('http://app.example.com:8080'); // the gate's hostname check passes it
      expect([otherPort.status, otherPort.headers.get('access-control-allow-origin')]).toEqual([204, null]);
    } finally {
      await strict.close();
    }
  });

  it('refuses foreign Origin and Host with 403 and accepts localhost', async () => {
    const body = { jsonrpc: '2.0', id: 8, method: 'server/discover', params: { _meta: meta } };
    expect((await raw(body, headers('server/discover', { origin: 'http://evil.example.com' }))).status).toBe(403);
    expect((await raw(body, headers('server/discover', { origin: 'http://localhost:3000' }))).status).toBe(200);
    const url = new URL(gw.url);
    const hostOnly = await new Promise<number>((resolve, reject) => {
      import('node:http').then(({ request }) => {
        const req = request(
          { host: '127.0.0.1', port: url.port, path: url.pathname, method: 'POST', headers: { ...headers('server/discover'), host: 'evil.example.com' } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(body));
      }, reject);
    });
    expect(hostOnly).toBe(403);
  });

  it('sends logs only when the request sets logLevel, filtered by level, on an SSE stream', async () => {
    const none = await post(gw.url, 'tools/call', { name: 'logs', arguments: {} });
    expect(none.notifications).toEqual([]);
    const some = await post(gw.url, 'tools/call', { name: 'logs', arguments: {} }, { meta: { 'io.modelcontextprotocol/logLevel': 'info' } });
    expect(some.contentType).toContain('text/event-stream');
    some.notifications.forEach(assertWireNotification);
    expect(some.notifications.map((n) => (n['params'] as { level: string }).level)).toEqual(['info', 'error']);
    assertWireResponse('tools/call', some.message);
  });

  it('sends progress under the request progressToken before the result', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'progress', arguments: { steps: 3 } }, { meta: { progressToken: 'progress-test-1' } });
    expect(r.contentType).toContain('text/event-stream');
    r.notifications.forEach(assertWireNotification);
    expect(r.notifications.map((n) => n['params'])).toEqual(
      [1, 2, 3].map((i) => ({ progressToken: 'progress-test-1', progress: i, total: 3, message: `step ${i}` })),
    );
    assertWireResponse('tools/call', r.message);
  });

  it('streams the reply as SSE when the client accepts only text/event-stream', async () => {
    const r = await raw({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: meta } }, headers('tools/list', { accept: 'text/event-stream' }));
    expect(r.contentType).toContain('text/event-stream');
    assertWireResponse('tools/list', r.message);
    const j = await raw({ jsonrpc: '2.0', id: 10, method: 'tools/list', params: { _meta: meta } }, headers('tools/list', { accept: 'application/json' }));
    expect(j.contentType).toContain('application/json');
  });

  it('answers /healthz while serving', async () => {
    const res = await fetch(new URL('/healthz', gw.url));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});

describe('refused requests in the log', () => {
  it('logs one mcp line for a request refused before it became an exchange or reached a legacy session: its status and which check, never its headers', async () => {
    const log = captureLog();
    const keyed = await startGateway(
      { mcpServers: { legacy: stdioFixture() }, gateway: { apiKeys: [{ principal: 'alice', key: 'secret-key-1234567890' }] } },
      { logger: log.logger },
    );
    try {
      const send = (h: Record<string, string>, body = '{}') => inProcess(keyed.gateway)(keyed.url, { method: 'POST', headers: h, body });
      const auth = { authorization: 'Bearer secret-key-1234567890' };
      expect((await send(headers('tools/list', { origin: 'http://evil.example.com', ...auth }))).status).toBe(403);
      expect((await send(headers('tools/list'))).status).toBe(401);
      expect((await send({ ...headers('tools/list', auth), 'content-type': 'text/plain' })).status).toBe(415);
      expect((await send(headers('tools/list', auth), '{not json')).status).toBe(400);
      expect((await send(headers('tools/list', auth), JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }))).status).toBe(400);
      // The legacy routes: a session's GET stream, the 2024-11-05 `/sse` and `/messages`.
      const at = (path: string, init: RequestInit) => inProcess(keyed.gateway)(new URL(path, keyed.url), init);
      expect((await at('/mcp', { headers: { accept: 'text/event-stream', 'mcp-session-id': 'x' } })).status).toBe(401);
      expect((await at('/sse', { headers: { accept: 'text/event-stream', origin: 'http://evil.example.com', ...auth } })).status).toBe(403);
      const message = (h: Record<string, string>, body: string) => at('/messages?sessionId=x', { method: 'POST', headers: h, body });
      expect((await message({ 'content-type': 'application/json' }, '{}')).status).toBe(401);
      expect((await message({ 'content-type': 'text/plain', ...auth }, '{}')).status).toBe(415);
      expect((await message({ 'content-type': 'application/json', ...auth }, '{not json')).status).toBe(400);
      const refused = log.lines.filter((l) => l['msg'] === 'mcp').map((l) => [l['status'], l['refused']]);
      expect(refused).toEqual([
        [403, 'gate'],
        [401, 'gate'],
        [415, 'content'],
        [400, 'body'],
        [400, 'envelope'],
        [401, 'gate'],
        [403, 'gate'],
        [401, 'gate'],
        [415, 'content'],
        [400, 'body'],
      ]);
      expect(JSON.stringify(log.lines)).not.toContain('secret-key-1234567890');
    } finally {
      await keyed.close();
    }
  });
});
