/**
 * Rate limits (issue 29, `gateway.rateLimits`) on one instance, over real HTTP on 127.0.0.1 with the
 * legacy fixture over stdio: a principal's burst of requests gets 429 + Retry-After past its budget
 * while another principal is served (2026-07-28 endpoint, a legacy streamable HTTP session, and on a
 * 2024-11-05 session's event stream as a JSON-RPC error); MRTR retries are not charged; the concurrent
 * call bound refuses the (n+1)th call and frees a unit when a call ends; the per principal × server
 * buckets (a default and a per-server one), also inside a legacy session's answer. The buckets refill
 * at one a minute, so nothing comes back while a test runs: no clock is needed, and no sleep.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModernServer } from '../fixtures/modern-server.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { assertWireResponse, openLegacySession, post, postInSession, readReply, type WireReply } from '../helpers/wire.js';

const key = (name: string) => `${name}-key-0123456789abcdef`;
const PRINCIPALS = ['alice', 'bob', 'carol', 'dave', 'erin', 'cc', 'dd', 'ps', 'lg', 'px'];
const apiKeys = PRINCIPALS.map((p) => ({ principal: p, key: key(p) }));
const as = (name: string) => ({ caps: { elicitation: {} }, headers: { authorization: `Bearer ${key(name)}` } });
const legacyHeaders = (name: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  authorization: `Bearer ${key(name)}`,
});

/** The JSON-RPC error of a reply, checked against the wire rules. */
function errorOf(method: string, r: WireReply): { code: number; message: string; data: Record<string, unknown> } {
  assertWireResponse(method, r.message);
  expect(r.message['error'], JSON.stringify(r.message)).toBeDefined();
  return r.message['error'] as never;
}

/** A rate-limit refusal as a plain answer: 429, Retry-After in whole seconds, and `data.retryAfterMs`. */
function expectRefused(method: string, r: WireReply, limit: string): Record<string, unknown> {
  expect(r.status).toBe(429);
  const error = errorOf(method, r);
  expect(error.code).toBe(-32000);
  expect(error.data).toMatchObject({ reason: 'rate_limited', limit });
  const ms = error.data['retryAfterMs'] as number;
  expect(ms).toBeGreaterThan(0);
  expect(Number(r.headers.get('retry-after'))).toBe(Math.max(1, Math.ceil(ms / 1000)));
  return error.data;
}

const served = (r: WireReply) => {
  expect(r.status, JSON.stringify(r.message)).toBe(200);
  expect(r.message['result'], JSON.stringify(r.message)).toBeDefined();
};

describe('the request rate limit (requestsPerMinute 1, burst 3)', () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { apiKeys, rateLimits: { requestsPerMinute: 1, burst: 3 } } });
  });
  afterAll(async () => gw?.close());

  it('answers the 4th request of a burst 429 with Retry-After, while another principal is served', async () => {
    for (let i = 0; i < 3; i++) served(await post(gw.url, 'tools/list', {}, as('alice')));
    const refused = await post(gw.url, 'tools/list', {}, { ...as('alice'), id: 'over' });
    const data = expectRefused('tools/list', refused, 'gateway.rateLimits.requestsPerMinute');
    expect(refused.message['id']).toBe('over');
    expect(data['retryAfterMs']).toBeGreaterThan(50_000); // one token a minute
    expect((await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, as('alice'))).status).toBe(429);
    served(await post(gw.url, 'tools/list', {}, as('bob')));
  });

  it('does not charge an MRTR retry (it continues a call charged when it started)', async () => {
    const first = await post(gw.url, 'tools/call', { name: 'elicit_name' }, as('carol'));
    const ir = first.message['result'] as { resultType: string; requestState: string };
    expect(ir.resultType).toBe('input_required');
    const retry = await post(
      gw.url,
      'tools/call',
      { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState },
      as('carol'),
    );
    expect(retry.message['result']).toMatchObject({ resultType: 'complete' });
    served(await post(gw.url, 'tools/list', {}, as('carol')));
    served(await post(gw.url, 'tools/list', {}, as('carol')));
    expectRefused('tools/list', await post(gw.url, 'tools/list', {}, as('carol')), 'gateway.rateLimits.requestsPerMinute');
  });

  it('charges a requestState that is not a parked call of ours: a forged one, and any on a legacy session', async () => {
    for (let i = 0; i < 3; i++) {
      const forged = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' }, requestState: `forged-${i}` }, as('ps'));
      expect(forged.status).toBe(200);
      expect(forged.message['error']).toMatchObject({ code: -32602 });
    }
    expectRefused('tools/list', await post(gw.url, 'tools/list', {}, as('ps')), 'gateway.rateLimits.requestsPerMinute');
    // On the session route the param means nothing (the session strips it): it is charged as any request.
    const sid = await openLegacySession(gw.url, legacyHeaders('lg'));
    const body = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, requestState: 'x' } });
    const inSession = (id: number) =>
      fetch(gw.url, {
        method: 'POST',
        headers: { ...legacyHeaders('lg'), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify(body(id)),
      }).then(readReply);
    expect((await inSession(1)).status).toBe(200);
    expect((await inSession(2)).status).toBe(200);
    expect((await inSession(3)).status).toBe(429);
  });

  it('answers a legacy streamable HTTP session 429 too (initialize is a request, notifications are free)', async () => {
    const sid = await openLegacySession(gw.url, legacyHeaders('dave'));
    for (let id = 1; id <= 2; id++) {
      const ok = await postInSession(gw.url, sid, 'tools/list', { id, headers: { authorization: `Bearer ${key('dave')}` } });
      expect(ok.status).toBe(200);
      expect((await readReply(ok)).message['result']).toBeDefined();
    }
    const over = await readReply(await postInSession(gw.url, sid, 'tools/list', { id: 3, headers: { authorization: `Bearer ${key('dave')}` } }));
    expect(over.status).toBe(429);
    expect(over.message).toMatchObject({ id: 3, error: { code: -32000, data: { reason: 'rate_limited' } } });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it("answers a 2024-11-05 session's request over the budget on its event stream, as a JSON-RPC error", async () => {
    const stream = await openSseSession(gw.url, 'erin');
    try {
      const send = async (body: Record<string, unknown>) => {
        const res = await fetch(stream.endpoint, { method: 'POST', headers: legacyHeaders('erin'), body: JSON.stringify(body) });
        expect(res.status).toBe(202);
        await res.body?.cancel();
      };
      const init = { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'old', version: '1' } };
      await send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: init });
      await send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
      await send({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} });
      await send({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: {} });
      await until('four answers on the stream', () => stream.messages.filter((m) => 'id' in m).length >= 4);
      const byId = new Map(stream.messages.map((m) => [m['id'], m]));
      expect(byId.get(3)?.['result']).toBeDefined();
      expect(byId.get(4)).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32000, data: { reason: 'rate_limited' } } });
      expect((byId.get(4)?.['error'] as { data: { retryAfterMs: number } }).data.retryAfterMs).toBeGreaterThan(0);
    } finally {
      stream.close();
    }
  });
});

describe('the call limits (maxConcurrentCalls 2; per server: 3 a minute, b 1)', () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await startGateway({
      mcpServers: { a: stdioFixture(), b: stdioFixture() },
      gateway: {
        apiKeys,
        rateLimits: { maxConcurrentCalls: 2, perServer: { callsPerMinute: 1, burst: 3 }, servers: { b: { callsPerMinute: 1, burst: 1 } } },
        proxyTools: { enabled: true },
      },
    });
  });
  afterAll(async () => gw?.close());

  it('refuses the 3rd concurrent call of a principal, serves another principal, and frees a unit when a call ends', async () => {
    const parked = [];
    for (let i = 0; i < 2; i++) {
      const r = await post(gw.url, 'tools/call', { name: 'a__elicit_name' }, as('cc'));
      parked.push(r.message['result'] as { resultType: string; requestState: string });
      expect(parked[i]!.resultType).toBe('input_required'); // waiting for input: still in flight
    }
    const third = await post(gw.url, 'tools/call', { name: 'a__echo', arguments: { text: 'x' } }, as('cc'));
    expect(expectRefused('tools/call', third, 'gateway.rateLimits.maxConcurrentCalls')).not.toHaveProperty('server');
    expect(gw.gateway.engine.live).toBe(2); // the refused call never started
    served(await post(gw.url, 'tools/call', { name: 'a__echo', arguments: { text: 'other' } }, as('dd')));
    const answered = await post(
      gw.url,
      'tools/call',
      { name: 'a__elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } }, requestState: parked[0]!.requestState },
      as('cc'),
    );
    expect(answered.message['result']).toMatchObject({ resultType: 'complete' });
    served(await post(gw.url, 'tools/call', { name: 'a__echo', arguments: { text: 'y' } }, as('cc')));
  });

  it('limits calls per principal × server, per its own bucket, and nothing else', async () => {
    for (let i = 0; i < 3; i++) served(await post(gw.url, 'tools/call', { name: 'a__echo', arguments: { text: `${i}` } }, as('ps')));
    const overA = await post(gw.url, 'tools/call', { name: 'a__echo', arguments: { text: 'x' } }, as('ps'));
    expect(expectRefused('tools/call', overA, 'gateway.rateLimits.perServer')).toMatchObject({ server: 'a' });
    served(await post(gw.url, 'tools/call', { name: 'b__echo', arguments: { text: 'b' } }, as('ps')));
    const overB = await post(gw.url, 'tools/call', { name: 'b__echo', arguments: { text: 'b' } }, as('ps'));
    expect(expectRefused('tools/call', overB, 'gateway.rateLimits.servers.b')).toMatchObject({ server: 'b' });
    served(await post(gw.url, 'tools/list', {}, as('ps'))); // lists are not calls
    served(await post(gw.url, 'tools/call', { name: 'a__echo', arguments: { text: 'x' } }, as('dd')));
  });

  it('charges the call execute_tool makes to the server it reaches', async () => {
    const run = (text: string) => post(gw.url, 'tools/call', { name: 'execute_tool', arguments: { server: 'b', tool: 'echo', arguments: { text } } }, as('px'));
    served(await run('1'));
    // The proxy tool's own call is not charged; the call it makes to b is, to px's bucket of b.
    expect(expectRefused('tools/call', await run('2'), 'gateway.rateLimits.servers.b')).toMatchObject({ server: 'b' });
  });

  it("answers a per-server refusal inside a legacy session's answer, as a JSON-RPC error", async () => {
    const sid = await openLegacySession(gw.url, legacyHeaders('lg'));
    const callB = async (id: number) => {
      const res = await fetch(gw.url, {
        method: 'POST',
        headers: { ...legacyHeaders('lg'), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'b__echo', arguments: { text: 'hi' } } }),
      });
      return readReply(res);
    };
    expect((await callB(1)).message['result']).toBeDefined();
    const over = await callB(2);
    expect(over.status).toBe(200); // the session's transport answers: the error is the message
    expect(over.message).toMatchObject({
      id: 2,
      error: { code: -32000, data: { reason: 'rate_limited', limit: 'gateway.rateLimits.servers.b', server: 'b' } },
    });
    expect((over.message['error'] as { data: { retryAfterMs: number } }).data.retryAfterMs).toBeGreaterThan(0);
  });
});

/** A 2024-11-05 session: `GET /sse`, its endpoint, and every message it carries. */
async function openSseSession(url: string, principal: string): Promise<{ endpoint: string; messages: Record<string, unknown>[]; close: () => void }> {
  const ac = new AbortController();
  const res = await fetch(new URL('/sse', url), { headers: { accept: 'text/event-stream', authorization: `Bearer ${key(principal)}` }, signal: ac.signal });
  expect(res.status).toBe(200);
  const messages: Record<string, unknown>[] = [];
  let endpoint: string | undefined;
  const reader = res.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  const pump = async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      if (value.event === 'endpoint') endpoint = new URL(value.data, url).toString();
      else if (value.data) messages.push(JSON.parse(value.data) as Record<string, unknown>);
    }
  };
  pump().catch(() => undefined); // ends when the stream is closed
  await until('the endpoint event', () => endpoint !== undefined);
  return { endpoint: endpoint!, messages, close: () => ac.abort() };
}

describe("a 2026-07-28 backend's own requestState (per server: 1 a minute, burst 2)", () => {
  let gw: RunningGateway;
  let modern: Awaited<ReturnType<typeof startModernServer>>;
  beforeAll(async () => {
    modern = await startModernServer();
    gw = await startGateway({
      mcpServers: { modern: { url: modern.url, protocol: '2026-07-28' } },
      gateway: { apiKeys, rateLimits: { perServer: { callsPerMinute: 1, burst: 2 } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await modern?.close();
  });

  it('charges each round it carries as a new call: a replayed state does not pass the limits', async () => {
    const first = await post(gw.url, 'tools/call', { name: 'confirm', arguments: { what: 'x' } }, as('px'));
    const ir = first.message['result'] as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(ir.resultType).toBe('input_required');
    const retry = {
      name: 'confirm',
      arguments: { what: 'x' },
      inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
      requestState: ir.requestState,
    };
    served(await post(gw.url, 'tools/call', retry, as('px')));
    // The same state again: a new call at the backend, over the bucket now.
    const replayed = await post(gw.url, 'tools/call', retry, as('px'));
    expect(replayed.status).toBe(429);
    expect(errorOf('tools/call', replayed).data).toMatchObject({ reason: 'rate_limited', server: 'modern' });
  });
});
