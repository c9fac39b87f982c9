/**
 * Fair shares (issue 25): legacy sessions (streamable HTTP and `/sse`), `subscriptions/listen` streams
 * and `await_activity` waits are bounded per principal as well as in total, so one key cannot lock the
 * others out; and a wait whose client hung up is released at once. Real HTTP on 127.0.0.1, the legacy
 * fixture over stdio, small bounds from the config.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryQuotas } from '../../src/cluster/quotas.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { META_CAPS, META_VERSION, openLegacySession, openListen, post, readReply } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefghi';
const CAROL = 'carol-key-0123456789abcdefg';
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** Polls `read` until `check` holds of what it read (../helpers/until.ts); that value. */
async function polled<T>(what: string, read: () => T | Promise<T>, check: (v: T) => boolean, deadlineMs?: number): Promise<T> {
  let v!: T;
  await until(what, async () => check((v = await read())), deadlineMs);
  return v;
}

let gw: RunningGateway;
const quotas = new InMemoryQuotas();

beforeAll(async () => {
  gw = await startGateway(
    {
      mcpServers: { legacy: stdioFixture() },
      gateway: {
        apiKeys: [
          { principal: 'alice', key: ALICE },
          { principal: 'bob', key: BOB },
          { principal: 'carol', key: CAROL },
        ],
        maxLegacySessions: 4,
        maxLegacySessionsPerPrincipal: 2,
        maxListenPerPrincipal: 2,
        maxListenTotal: 16,
        proxyTools: { enabled: true, maxAwaitPerPrincipal: 3, maxAwaitTotal: 64 },
      },
    },
    { quotas },
  );
});
afterAll(async () => gw?.close());

const legacyHeaders = (key: string, sid?: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  ...auth(key),
  ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } : {}),
});

/** A 2025-11-25 `initialize` (and `notifications/initialized` when it opened a session). */
async function initialize(key: string): Promise<{ status: number; sid: string | null; message: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(gw.url, {
    method: 'POST',
    headers: legacyHeaders(key),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fair', version: '1' } },
    }),
  });
  const sid = res.headers.get('mcp-session-id');
  const reply = await readReply(res);
  if (sid) {
    const ack = await fetch(gw.url, {
      method: 'POST',
      headers: legacyHeaders(key, sid),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    await ack.body?.cancel();
  }
  return { status: res.status, sid, message: reply.message, headers: res.headers };
}

/** Opens a session's GET stream (its client is connected); `close` hangs it up. */
async function openStream(key: string, sid: string): Promise<() => void> {
  const ac = new AbortController();
  const res = await fetch(gw.url, { headers: { ...legacyHeaders(key, sid), accept: 'text/event-stream' }, signal: ac.signal });
  expect(res.status).toBe(200);
  return () => ac.abort();
}

async function ping(key: string, sid: string): Promise<number> {
  const res = await fetch(gw.url, { method: 'POST', headers: legacyHeaders(key, sid), body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }) });
  await res.body?.cancel();
  return res.status;
}

async function end(key: string, sid: string): Promise<void> {
  const res = await fetch(gw.url, { method: 'DELETE', headers: legacyHeaders(key, sid) });
  await res.body?.cancel();
}

/** `GET /sse`: the status, the refusal body when refused, and how to hang the stream up. */
async function openSse(key: string): Promise<{ status: number; message?: Record<string, unknown>; close: () => void }> {
  const ac = new AbortController();
  const res = await fetch(new URL('/sse', gw.url), { headers: { accept: 'text/event-stream', ...auth(key) }, signal: ac.signal });
  if (res.status !== 200) return { status: res.status, message: (await readReply(res)).message, close: () => ac.abort() };
  return { status: res.status, close: () => ac.abort() };
}

describe('legacy sessions, per principal and in total', () => {
  it("refuses a principal's initialize past its bound with 429 principal_limit while another principal still opens one", async () => {
    const a1 = await initialize(ALICE);
    const a2 = await initialize(ALICE);
    expect([a1.status, a2.status]).toEqual([200, 200]);
    // Both are in use (a connected GET stream each): none may be closed to make room.
    const streams = [await openStream(ALICE, a1.sid!), await openStream(ALICE, a2.sid!)];
    const a3 = await initialize(ALICE);
    expect(a3.status).toBe(429);
    expect(a3.sid).toBeNull();
    expect(a3.message['error']).toMatchObject({
      code: -32000,
      data: { reason: 'principal_limit', limit: 'gateway.maxLegacySessionsPerPrincipal', max: 2 },
    });
    expect((a3.message['error'] as { data: { free: string } }).data.free).toMatch(/DELETE/);
    const b1 = await initialize(BOB);
    expect(b1.status).toBe(200);
    expect(await ping(BOB, b1.sid!)).toBe(200);
    // The pool (4) fills: alice 2 + bob 2, all connected; carol is told the gateway is full, not that she is.
    const b2 = await initialize(BOB);
    expect(b2.status).toBe(200);
    streams.push(await openStream(BOB, b1.sid!), await openStream(BOB, b2.sid!));
    const c1 = await initialize(CAROL);
    expect(c1.status).toBe(503);
    expect(c1.headers.get('retry-after')).toBe('1');
    expect(c1.message['error']).toMatchObject({ code: -32000, data: { reason: 'total_limit', limit: 'gateway.maxLegacySessions', max: 4 } });
    for (const close of streams) close();
    for (const [key, sid] of [
      [ALICE, a1.sid],
      [ALICE, a2.sid],
      [BOB, b1.sid],
      [BOB, b2.sid],
    ] as const)
      await end(key, sid!);
  });

  it("closes the principal's least recently used idle session to make room for its next one", async () => {
    const a1 = await initialize(ALICE);
    const a2 = await initialize(ALICE);
    const a2At = Date.now();
    await until('the clock to move on', () => Date.now() > a2At); // a1's use below is later than a2's
    expect(await ping(ALICE, a1.sid!)).toBe(200); // a2 is now the one idle the longest
    const a3 = await initialize(ALICE);
    expect(a3.status).toBe(200);
    expect(await ping(ALICE, a2.sid!)).toBe(404); // a 2025 client initializes again on 404
    expect(await ping(ALICE, a1.sid!)).toBe(200);
    expect(await ping(ALICE, a3.sid!)).toBe(200);
    await end(ALICE, a1.sid!);
    await end(ALICE, a3.sid!);
  });

  it('bounds GET /sse streams per principal (429 principal_limit), not other principals, and frees one as soon as its stream closes', async () => {
    const s1 = await openSse(ALICE);
    const s2 = await openSse(ALICE);
    expect([s1.status, s2.status]).toEqual([200, 200]);
    const s3 = await openSse(ALICE);
    expect(s3.status).toBe(429);
    expect(s3.message?.['error']).toMatchObject({ data: { reason: 'principal_limit', limit: 'gateway.maxLegacySessionsPerPrincipal' } });
    const b = await openSse(BOB);
    expect(b.status).toBe(200);
    s1.close();
    // "As soon as": long before the stream would be closed as idle; how soon is for `npm run bench`.
    const again = await polled(
      'room for another /sse stream',
      () => openSse(ALICE),
      (r) => r.status === 200,
    );
    expect(again.status).toBe(200);
    for (const s of [s2, b, again]) s.close();
  });
});

describe('subscriptions/listen, per principal', () => {
  const listenOnce = (key: string) =>
    fetch(gw.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
        ...auth(key),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'l',
        method: 'subscriptions/listen',
        params: { notifications: { toolsListChanged: true }, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: {} } },
      }),
    });

  it('refuses the stream past the bound with 429 principal_limit, serves another principal, and frees it when the client hangs up', async () => {
    const l1 = await openListen(gw.url, 1, { toolsListChanged: true }, { headers: auth(ALICE) });
    const l2 = await openListen(gw.url, 2, { toolsListChanged: true }, { headers: auth(ALICE) });
    const third = await listenOnce(ALICE);
    expect(third.status).toBe(429);
    expect((await readReply(third)).message['error']).toMatchObject({
      code: -32000,
      data: { reason: 'principal_limit', limit: 'gateway.maxListenPerPrincipal', max: 2 },
    });
    const bob = await openListen(gw.url, 3, { toolsListChanged: true }, { headers: auth(BOB) });
    await bob.waitFor(1);
    expect(bob.messages[0]?.['method']).toBe('notifications/subscriptions/acknowledged');
    l1.close();
    const again = await polled(
      'room for another listen stream',
      () => listenOnce(ALICE),
      (r) => r.status === 200 || (void r.body?.cancel(), false),
    );
    expect(again.status).toBe(200);
    await again.body?.cancel();
    l2.close();
    bob.close();
  });
});

/** An await_activity call as a 2026-07-28 client makes it. */
function awaitActivity(key: string, timeoutMs: number, signal?: AbortSignal) {
  return post(gw.url, 'tools/call', { name: 'await_activity', arguments: { timeout_ms: timeoutMs } }, { headers: auth(key), ...(signal ? { signal } : {}) });
}

describe('await_activity, per principal', () => {
  it('refuses a wait past the bound with a TOOL_ERR_LIMIT tool error (principal_limit) while another principal still waits', async () => {
    // Take what is pending so that the waits below wait.
    await awaitActivity(ALICE, 10);
    await awaitActivity(BOB, 10);
    const ac = new AbortController();
    const waits = [1, 2, 3].map(() => awaitActivity(ALICE, 20_000, ac.signal).catch(() => undefined));
    expect(
      await polled(
        'three waits of alice',
        () => quotas.count('await:alice'),
        (n) => n === 3,
      ),
    ).toBe(3);
    const fourth = await awaitActivity(ALICE, 20_000);
    const result = fourth.message['result'] as { isError?: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0]!.text)).toMatchObject({
      error: { code: 'TOOL_ERR_LIMIT', details: { reason: 'principal_limit', limit: 'gateway.proxyTools.maxAwaitPerPrincipal', max: 3 } },
    });
    const bob = await awaitActivity(BOB, 50);
    const bobResult = bob.message['result'] as { isError?: boolean; content: { text: string }[] };
    expect(bobResult.isError).toBeUndefined();
    expect(JSON.parse(bobResult.content[0]!.text)).toMatchObject({ triggers: [{ type: 'timeout' }] });
    ac.abort();
    await Promise.all(waits);
    expect(
      await polled(
        "alice's wait shares to be given back",
        () => quotas.count('await:alice'),
        (n) => n === 0,
      ),
    ).toBe(0);
  });
});

/** A POST over its own socket (no keep-alive, no client that reconnects); `hangUp` destroys the socket. */
function rawPost(url: string, headers: Record<string, string>, body: unknown): { hangUp(): void } {
  const u = new URL(url);
  const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, headers });
  req.on('error', () => undefined);
  req.on('response', (res) => res.on('error', () => undefined).resume());
  req.end(JSON.stringify(body));
  return { hangUp: () => req.destroy() };
}

describe('a wait whose client hung up', () => {
  let gw2: RunningGateway;
  const counts = new InMemoryQuotas();
  beforeAll(async () => {
    gw2 = await startGateway(
      {
        mcpServers: { legacy: stdioFixture() },
        gateway: { apiKeys: [{ principal: 'alice', key: ALICE }], proxyTools: { enabled: true, maxAwaitPerPrincipal: 200, maxAwaitTotal: 200 } },
      },
      { quotas: counts },
    );
  });
  afterAll(async () => gw2?.close());
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth(ALICE) };

  /**
   * Starts `n` waits with `start`, checks they hold what a wait holds (a socket on the gateway, a live
   * call, a wait share), hangs them all up, and checks all of it is given back long before the waits' timeout.
   */
  async function hangUpAll(n: number, start: (i: number) => { hangUp(): void }): Promise<void> {
    const live = gw2.gateway.engine.live;
    const sockets = new Set<Socket>();
    const onConnection = (socket: Socket): void => void sockets.add(socket);
    gw2.server.on('connection', onConnection);
    const waits = Array.from({ length: n }, (_, i) => start(i));
    try {
      expect(
        await polled(
          `${n} waits`,
          () => counts.count('await:alice'),
          (c) => c === n,
        ),
      ).toBe(n);
    } finally {
      gw2.server.off('connection', onConnection);
    }
    expect(sockets.size).toBe(n);
    expect(gw2.gateway.engine.live).toBe(live + n);
    for (const w of waits) w.hangUp();
    // "At once": long before the waits' own 60 s timeout (15 s here, for a loaded machine); how soon
    // exactly is for `npm run bench`.
    const released = await polled(
      'the waits to be released',
      () => ({ waits: counts.count('await:alice'), sockets: [...sockets].filter((s) => !s.destroyed).length, calls: gw2.gateway.engine.live - live }),
      (r) => r.waits === 0 && r.sockets === 0 && r.calls === 0,
      15_000,
    );
    expect(released).toEqual({ waits: 0, sockets: 0, calls: 0 });
  }

  it('releases 100 await_activity waits of 2026-07-28 clients at once: sockets, calls and wait slots (with their timers)', async () => {
    await post(gw2.url, 'tools/call', { name: 'await_activity', arguments: { timeout_ms: 10 } }, { headers: auth(ALICE) });
    await hangUpAll(100, (i) =>
      rawPost(
        gw2.url,
        { ...headers, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'await_activity' },
        {
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'await_activity', arguments: { timeout_ms: 60_000 }, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: {} } },
        },
      ),
    );
  });

  it('releases 50 await_activity waits in a legacy session when their POST streams drop (answered without taking events)', async () => {
    const sid = await openLegacySession(gw2.url, headers, 'fair');
    const inSession = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    await hangUpAll(50, (i) =>
      rawPost(gw2.url, inSession, { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'await_activity', arguments: { timeout_ms: 60_000 } } }),
    );
    await (await fetch(gw2.url, { method: 'DELETE', headers: inSession })).body?.cancel();
  });
});

describe('requests in flight', () => {
  it("refuses a request past its principal's bound (429 principal_limit) and past the total (503 total_limit), and frees a slot when its answer is written", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'in-flight-'));
    const calls = join(dir, 'calls.log');
    const bounded = await startGateway({
      mcpServers: { legacy: stdioFixture({ FIXTURE_CALL_LOG: calls }) },
      gateway: {
        apiKeys: [
          { principal: 'alice', key: ALICE },
          { principal: 'bob', key: BOB },
        ],
        maxRequestsInFlightPerPrincipal: 2,
        maxRequestsInFlightTotal: 3,
      },
    });
    const stops: AbortController[] = [];
    /** A call that runs until its client hangs up, once the backend has it. */
    const held = async (key: string, id: string): Promise<void> => {
      const stop = new AbortController();
      stops.push(stop);
      post(bounded.url, 'tools/call', { name: 'slow', arguments: { id } }, { headers: auth(key), signal: stop.signal }).catch(() => undefined);
      await until(`call ${id} to reach the backend`, () => existsSync(calls) && readFileSync(calls, 'utf8').includes(`started ${id}\n`));
    };
    try {
      await held(ALICE, 'a1');
      await held(ALICE, 'a2');
      const third = await post(bounded.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { headers: auth(ALICE) });
      expect(third.status).toBe(429);
      expect(third.message['error']).toMatchObject({
        code: -32000,
        data: { reason: 'principal_limit', limit: 'gateway.maxRequestsInFlightPerPrincipal', max: 2 },
      });
      await held(BOB, 'b1');
      const full = await post(bounded.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { headers: auth(BOB) });
      expect(full.status).toBe(503);
      expect(full.headers.get('retry-after')).toBe('1');
      expect(full.message['error']).toMatchObject({ data: { reason: 'total_limit', limit: 'gateway.maxRequestsInFlightTotal', max: 3 } });
      // Alice hangs up one of hers: its slot is free once the call has ended.
      stops[0]!.abort();
      const again = await polled(
        'a slot to be free again',
        () => post(bounded.url, 'tools/call', { name: 'echo', arguments: { text: 'back' } }, { headers: auth(ALICE) }),
        (r) => r.status === 200,
      );
      expect(again.message['result']).toMatchObject({ content: [{ text: 'back' }] });
    } finally {
      for (const stop of stops) stop.abort();
      await bounded.close();
    }
  });
});
