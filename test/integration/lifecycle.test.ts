/**
 * Lifecycle of the engine and its backends: a pool waiter served while its session is still starting
 * keeps it (no session left bound to a call nobody waits for); a burst of calls starts at most
 * `maxSessionStarts` backend processes at once and every caller is served; `close()` returns only when backend
 * processes are gone; a graceful drain refuses new work with 503 + Retry-After while calls in flight
 * and parked calls finish, then tells the clients still waiting that the gateway is closing; a
 * restart with a state directory keeps the instance id, so a retry for a lost call is `gone`.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { LegacyBackend } from '../../src/core/backend/legacy-backend.js';
import { parseConfig } from '../../src/config.js';
import { createGateway } from '../../src/gateway.js';
import { randomStateKey } from '../../src/protocol/request-state.js';
import { TASKS_EXTENSION } from '../../src/protocol/rev-2026-07-28/tasks.js';
import { firstText, startGateway, stdioFixture } from '../helpers/gateway.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { pause, until } from '../helpers/until.js';
import { assertWireResponse, post, postInitialize, postInSession, type WireReply } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const answer = (name: string) => ({ action: 'accept', content: { name } });

function stateOf(r: WireReply): string {
  const result = r.message['result'] as { resultType?: string; requestState?: string } | undefined;
  if (result?.resultType !== 'input_required' || !result.requestState) throw new Error(`expected input_required: ${JSON.stringify(r.message)}`);
  return result.requestState;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('lifecycle', () => {
  it('gives a queued caller the session started for it, even when starting it outlasts the wait deadline', async () => {
    const clock = new ManualClock();
    const gw = await startGateway({ mcpServers: { legacy: { ...stdioFixture(), maxSessions: 1 } }, gateway: { sessionWaitMs: 100 } }, { clock });
    try {
      const backend = gw.gateway.backends[0] as LegacyBackend;
      const parked = stateOf(await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT }));
      expect(parked).toBeTruthy();
      expect(backend.stats).toMatchObject({ sessions: 1, busy: 1 });
      const queued = post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'queued' } }, { caps: ELICIT });
      await until('a caller to queue for a session', () => backend.stats.waiting === 1);
      // The parked call expires: its session is discarded and a new one starts for the queued call.
      // Spawning a process takes far longer than the 100 ms wait deadline.
      clock.advance(600_000);
      const r = await queued;
      assertWireResponse('tools/call', r.message);
      expect(firstText(r.message['result'] as { content?: unknown })).toBe('queued');
      expect(backend.stats).toMatchObject({ sessions: 1, busy: 0, waiting: 0 });
      const again = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'again' } }, { caps: ELICIT });
      expect(again.message['result']).toMatchObject({ content: [{ text: 'again' }] });
    } finally {
      await gw.close();
    }
  });

  it('keeps a spare session ready per principal and capability set, and uses it for the next call', async () => {
    const gw = await startGateway({ mcpServers: { legacy: { ...stdioFixture(), maxSessions: 4 } } });
    try {
      const backend = gw.gateway.backends[0] as LegacyBackend;
      const first = await post(gw.url, 'tools/call', { name: 'pid' }, { caps: ELICIT });
      await until('two sessions up, none connecting', () => backend.stats.sessions === 2 && backend.stats.connecting === 0);
      expect(backend.stats).toMatchObject({ sessions: 2, busy: 0 });
      // a parked call holds one session; the next call takes the spare at once and a new spare starts
      const parked = await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
      expect(parked.message['result']).toMatchObject({ resultType: 'input_required' });
      const second = await post(gw.url, 'tools/call', { name: 'pid' }, { caps: ELICIT });
      expect(firstText(second.message['result'] as { content?: unknown })).not.toBe(firstText(first.message['result'] as { content?: unknown }));
      await until('three sessions up, none connecting', () => backend.stats.sessions === 3 && backend.stats.connecting === 0);
      expect(backend.stats).toMatchObject({ sessions: 3, busy: 1 });
    } finally {
      await gw.close();
    }
  });

  it('starts at most maxSessionStarts backend processes at once, and serves every caller', async () => {
    // Each process notes when it began, then takes 300 ms to start: a start that began while two were
    // under way would show as three beginnings within 300 ms.
    const dir = mkdtempSync(join(tmpdir(), 'starts-'));
    const log = join(dir, 'began');
    const fixture = stdioFixture() as { command: string; args: string[] };
    const wrapped = {
      command: '/bin/sh',
      args: ['-c', 'date +%s%3N >> "$STARTS_LOG"; sleep 0.3; exec "$0" "$@"', fixture.command, ...fixture.args],
      env: { STARTS_LOG: log },
    };
    const gw = await startGateway({ mcpServers: { legacy: { ...wrapped, maxSessions: 8, spareSessions: 0 } }, gateway: { maxSessionStarts: 2 } });
    try {
      const backend = gw.gateway.backends[0] as LegacyBackend;
      // The capability set's tool list (a session of its own) and one call session, started alone.
      await post(gw.url, 'tools/call', { name: 'pid' }, { caps: ELICIT });
      const before = readFileSync(log, 'utf8').trim().split('\n').length;
      const parked = await Promise.all(Array.from({ length: 6 }, () => post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT })));
      for (const r of parked) expect(r.message['result']).toMatchObject({ resultType: 'input_required' });
      expect(backend.stats).toMatchObject({ sessions: 6, busy: 6, waiting: 0, connecting: 0 });
      const began = readFileSync(log, 'utf8').trim().split('\n').slice(before).map(Number);
      expect(began).toHaveLength(5); // the idle session served one caller
      for (let i = 2; i < began.length; i++) expect(began[i]! - began[i - 2]!).toBeGreaterThanOrEqual(300);
    } finally {
      await gw.close();
    }
  });

  it('lets an operator free a parked call sooner than its requestState lives (parkTimeoutMs)', async () => {
    const clock = new ManualClock();
    const gw = await startGateway({ mcpServers: { legacy: { ...stdioFixture(), parkTimeoutMs: 1_000 } } }, { clock });
    try {
      const state = stateOf(await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT }));
      clock.advance(999);
      expect(gw.gateway.engine.live).toBe(1);
      clock.advance(1);
      expect(gw.gateway.engine.live).toBe(0); // the state itself lives 600 s
      const r = await post(gw.url, 'tools/call', { name: 'elicit_name', inputResponses: { user_name: answer('late') }, requestState: state }, { caps: ELICIT });
      expect(r.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_gone' } });
    } finally {
      await gw.close();
    }
  });

  it('returns from close() only when the backend processes have exited', async () => {
    const gw = await startGateway({ mcpServers: { legacy: stdioFixture() } });
    const pids: number[] = [];
    for (const caps of [{}, ELICIT, { sampling: {} }]) {
      const r = await post(gw.url, 'tools/call', { name: 'pid' }, { caps });
      pids.push(Number(firstText(r.message['result'] as { content?: unknown })));
    }
    expect(pids.every(isAlive)).toBe(true);
    await gw.close();
    expect(pids.filter(isAlive)).toEqual([]);
  });

  it('drains: new work gets 503 + Retry-After; parked and running calls finish; drain ends when they have', async () => {
    const gw = await startGateway({ mcpServers: { legacy: stdioFixture() } });
    try {
      const state = stateOf(await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT }));
      const running = post(gw.url, 'tools/call', { name: 'slow', arguments: { id: 'drain-1', ms: 300 } });
      await until('two live calls', () => gw.gateway.engine.live === 2);
      const drained = gw.gateway.drain(10_000);
      const refused = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'new' } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.message['error']).toMatchObject({ code: -32603, data: { reason: 'gateway_draining' } });
      const list = await post(gw.url, 'tools/list');
      expect(list.status).toBe(503);
      // A legacy client's new session too: initialize, and a 2024-11-05 GET /sse.
      const init = await postInitialize(gw.url, 'late');
      expect([init.status, init.headers.get('retry-after'), init.headers.get('mcp-session-id')]).toEqual([503, '1', null]);
      expect(await init.json()).toMatchObject({ error: { data: { reason: 'gateway_draining' } } });
      const sse = await fetch(new URL('/sse', gw.url), { headers: { accept: 'text/event-stream' } });
      expect([sse.status, sse.headers.get('retry-after')]).toEqual([503, '1']);
      await sse.body?.cancel();
      const health = await fetch(new URL('/healthz', gw.url));
      expect(health.status).toBe(503);
      const done = await post(
        gw.url,
        'tools/call',
        { name: 'elicit_name', inputResponses: { user_name: answer('Di') }, requestState: state },
        { caps: ELICIT },
      );
      expect(done.message['result']).toMatchObject({ content: [{ text: 'Hello, Di!' }] });
      expect((await running).message['result']).toMatchObject({ content: [{ text: 'finished' }] });
      await drained;
      expect(gw.gateway.engine.live).toBe(0);
    } finally {
      await gw.close();
    }
  });

  it('drains without a cluster store only once a client polling a task has seen it end (its end goes with the instance)', async () => {
    const gw = await startGateway({
      mcpServers: { legacy: { ...stdioFixture(), tasks: { tools: { slow: { promoteAfterMs: 0 } } } } },
      gateway: { tasks: { pollIntervalMs: 100 } },
    });
    try {
      const tasks = { extensions: { [TASKS_EXTENSION]: {} } };
      const created = (await post(gw.url, 'tools/call', { name: 'slow', arguments: { id: 'drain-task', ms: 300 } }, { caps: tasks })).message['result'];
      const { taskId } = created as { taskId: string };
      const get = async (): Promise<Record<string, unknown>> => {
        const reply = await post(gw.url, 'tasks/get', { taskId }, { caps: tasks });
        if (!reply.message['result']) throw new Error(`tasks/get: ${JSON.stringify(reply.message['error'])}`);
        return reply.message['result'] as Record<string, unknown>;
      };
      expect(await get()).toMatchObject({ status: 'working' });
      let drainedAt: number | undefined;
      const drained = gw.gateway.drain(10_000).then(() => (drainedAt = Date.now()));
      // The client polls at the interval the task suggests; the drain waits for it to see the end.
      let seen: Record<string, unknown>;
      for (;;) {
        await pause(100);
        seen = await get();
        if (seen['status'] !== 'working') break;
      }
      const seenAt = Date.now();
      expect(seen).toMatchObject({ status: 'completed', result: { content: [{ text: 'finished' }] } });
      await drained;
      expect(drainedAt).toBeGreaterThanOrEqual(seenAt);
    } finally {
      await gw.close();
    }
  });

  it("drains a legacy client's session only once its call in flight has its answer", async () => {
    const gw = await startGateway({ mcpServers: { legacy: stdioFixture() } });
    const client = new Client({ name: 'legacy-client', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(gw.url));
    await client.connect(transport);
    try {
      const call = client.callTool({ name: 'slow', arguments: { id: 'drain-legacy', ms: 300 } });
      await until('one live call', () => gw.gateway.engine.live === 1);
      const drained = gw.gateway.drain(10_000);
      // New work in the open session is refused as on /mcp (503, Retry-After); a ping still passes.
      const refused = await postInSession(gw.url, transport.sessionId!, 'tools/list', { id: 77 });
      expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '1']);
      expect(await refused.json()).toMatchObject({ id: 77, error: { data: { reason: 'gateway_draining' } } });
      await expect(client.listTools()).rejects.toThrow(/shutting down/);
      await expect(client.ping()).resolves.toBeDefined();
      expect(await call).toMatchObject({ content: [{ type: 'text', text: 'finished' }] });
      await drained;
    } finally {
      await client.close().catch(() => undefined);
      await gw.close();
    }
  });

  it('at the drain deadline cancels what is left; a waiting client is told the gateway is closing', async () => {
    const gw = await startGateway({ mcpServers: { legacy: stdioFixture() } });
    try {
      const running = post(gw.url, 'tools/call', { name: 'slow', arguments: { id: 'drain-2' } });
      await until('one live call', () => gw.gateway.engine.live === 1);
      await gw.gateway.drain(200);
      const r = await running;
      assertWireResponse('tools/call', r.message);
      expect(r.message['error']).toMatchObject({ code: -32603, data: { reason: 'gateway_closing' } });
      expect((r.message['error'] as { message: string }).message).toMatch(/shutting down/);
    } finally {
      await gw.close();
    }
  });

  it("at the drain deadline tells a legacy client's waiting call the gateway is closing, on both transports", async () => {
    const gw = await startGateway({ mcpServers: { legacy: stdioFixture() } });
    const clients = [new StreamableHTTPClientTransport(new URL(gw.url)), new SSEClientTransport(new URL('/sse', gw.url))].map(async (transport) => {
      const client = new Client({ name: 'legacy-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, () => new Promise(() => undefined)); // never answers
      await client.connect(transport);
      return client;
    });
    const connected = await Promise.all(clients);
    try {
      const calls = connected.map((c) =>
        c.callTool({ name: 'elicit_name', arguments: {} }).then(
          () => 'answered',
          (e: Error) => e.message,
        ),
      );
      await until('two calls waiting for input', () => gw.gateway.engine.live === 2);
      await gw.gateway.drain(100);
      for (const outcome of await Promise.all(calls)) expect(outcome).toMatch(/shutting down/);
    } finally {
      await Promise.all(connected.map((c) => c.close().catch(() => undefined)));
      await gw.close();
    }
  });

  it('keeps its instance id in the state directory, so a retry after a restart is request_state_gone, and a task of before it task_lost', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'gw-state-'));
    const stateKeys = [await randomStateKey()];
    const config = { mcpServers: { legacy: { ...stdioFixture(), tasks: { tools: { slow: { promoteAfterMs: 0 } } } } }, gateway: { stateDir } };
    const tasks = { extensions: { [TASKS_EXTENSION]: {} } };
    const first = await startGateway(config, { stateKeys });
    const id = first.gateway.instanceId;
    expect(readFileSync(join(stateDir, 'instance-id'), 'utf8').trim()).toBe(id);
    const state = stateOf(await post(first.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT }));
    const created = await post(first.url, 'tools/call', { name: 'slow', arguments: { id: 'lost-task', ms: 60_000 } }, { caps: tasks });
    const { taskId } = created.message['result'] as { taskId: string };
    await first.close();
    const second = await startGateway(config, { stateKeys });
    try {
      expect(second.gateway.instanceId).toBe(id);
      const r = await post(
        second.url,
        'tools/call',
        { name: 'elicit_name', inputResponses: { user_name: answer('x') }, requestState: state },
        { caps: ELICIT },
      );
      expect(r.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_gone' } });
      // The task went with the first run: said so, not only "unknown, expired, or not yours".
      const lost = await post(second.url, 'tasks/get', { taskId }, { caps: tasks });
      expect(lost.message['error']).toMatchObject({
        code: -32602,
        message: expect.stringMatching(
          /^Task not found: .* earlier run of this gateway instance \(it restarted since\); it is gone, with its result if it had one/,
        ),
        data: { taskId, reason: 'task_lost' },
      });
      // An id this run could have made but did not (its own mark, other random bytes) is not called lost.
      const own = (await post(second.url, 'tools/call', { name: 'slow', arguments: { id: 'own-task', ms: 10 } }, { caps: tasks })).message['result'];
      const forged = `${(own as { taskId: string }).taskId.slice(0, -22)}${'A'.repeat(22)}`;
      const unknown = await post(second.url, 'tasks/get', { taskId: forged }, { caps: tasks });
      expect(unknown.message['error']).toMatchObject({
        code: -32602,
        message: expect.stringMatching(/\(unknown, expired, or not yours\)$/),
        data: { taskId: forged },
      });
      expect((unknown.message['error'] as { data: Record<string, unknown> }).data['reason']).toBeUndefined();
    } finally {
      await second.close();
    }
  });
});

describe('a backend stuck in its handshake', () => {
  it('does not hold up close(): an HTTP+SSE server that never sends its endpoint event', async () => {
    const open: import('node:http').ServerResponse[] = [];
    const silent = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': connected\n\n');
      open.push(res);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(silent.address() as import('node:net').AddressInfo).port}/sse`;
    const parsed = parseConfig({ mcpServers: { stuck: { url, transport: 'sse' } } });
    if (!parsed.ok) throw new Error(parsed.error.join('\n'));
    const gateway = await createGateway(parsed.value, { stateKeys: [await randomStateKey()] });
    try {
      await until('the handshake to begin', () => open.length > 0); // the handshake is under way, and will never finish
      // close() does not wait for the connect deadline (20 s, not configurable): the test's own 30 s
      // timeout is no bound here, so close() is raced against a generous 15 s, still short of it.
      const closed = Promise.all([gateway.close(), gateway.ready]).then(() => 'closed');
      const bound = new Promise<string>((r) => setTimeout(() => r('still closing after 15 s'), 15_000).unref());
      expect(await Promise.race([closed, bound])).toBe('closed'); // gateway.ready settles too: the first connection attempt has ended
    } finally {
      for (const res of open) res.destroy();
      await new Promise((r) => silent.close(r));
    }
  });
});
