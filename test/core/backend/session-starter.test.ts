/** The session starter against the legacy fixture: over stdio (real processes), and an HTTP address nobody serves. */
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { BackendSession } from '../../../src/core/backend/backend-session.js';
import { BackendRequestRefused, CALL_ENDED, type CallChannel } from '../../../src/core/backend/port.js';
import { createSessionStarter, type SessionStarterOptions } from '../../../src/core/backend/session-starter.js';
import { StartFailure } from '../../../src/core/backend/start-failure.js';
import { parseServerEntry, type ServerConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { stdioFixture } from '../../helpers/gateway.js';
import { until } from '../../helpers/until.js';

const sessions: BackendSession[] = [];
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.close()));
});

function serverOf(entry: Record<string, unknown>): ServerConfig {
  const parsed = parseServerEntry('b', entry);
  if (!parsed.ok) throw new Error(parsed.error.join('; '));
  return parsed.value;
}

function starter(server: ServerConfig, extra: Partial<SessionStarterOptions> = {}) {
  return createSessionStarter({
    server,
    roots: [],
    hungAfterMs: 30_000,
    clientInfo: { name: 'test', version: '0' },
    logger: silentLogger,
    onListChanged: () => undefined,
    onResourceUpdated: () => undefined,
    ...extra,
  });
}

/** A call that answers the backend's roots/list with one root of its own. */
const caller: CallChannel = {
  id: 'call-1',
  requestInput: async () => ({ roots: [{ uri: 'file:///from-the-caller' }] }),
  progress: () => undefined,
  log: () => undefined,
  notification: () => undefined,
};

const initRoots = async (session: BackendSession, run?: CallChannel): Promise<unknown> => {
  const result = await session.request('tools/call', { name: 'init_roots' }, { signal: AbortSignal.timeout(10_000), timeoutMs: 10_000 }, run);
  return (result['content'] as { text: string }[])[0]?.text;
};

describe('createSessionStarter', () => {
  it("answers a catalog session's own roots/list from configuration, and holds a call session's for its principal's call", { timeout: 60_000 }, async () => {
    const start = starter(serverOf(stdioFixture()));
    const catalog = await start({ roots: {} }, AbortSignal.timeout(10_000), 'catalog');
    sessions.push(catalog);
    expect(await initRoots(catalog)).toBe('init roots: ');
    const calls = await start({ roots: {} }, AbortSignal.timeout(10_000), 'calls');
    sessions.push(calls);
    calls.bindExclusive(caller);
    expect(await initRoots(calls, caller)).toBe('init roots: file:///from-the-caller');
    calls.release(caller);
  });

  it('holds a start-up roots/list again when the call it was handed ends unanswered, and hands it to the next call first', { timeout: 60_000 }, async () => {
    const start = starter(serverOf(stdioFixture()));
    const calls = await start({ roots: {} }, AbortSignal.timeout(10_000), 'calls');
    sessions.push(calls);
    // A call that ends before its client answers (it left, its parked call expired).
    const leaving: CallChannel = { ...caller, id: 'call-0', requestInput: async () => Promise.reject(new BackendRequestRefused(-32603, CALL_ENDED)) };
    calls.bindExclusive(leaving);
    await calls.askedFirst(leaving);
    calls.release(leaving);
    expect(calls.askedFirst(leaving)).toBeUndefined(); // taken once
    calls.bindExclusive(caller);
    await calls.askedFirst(caller);
    expect(await initRoots(calls, caller)).toBe('init roots: file:///from-the-caller');
    calls.release(caller);
  });

  it('marks a list change the backend announces while the session settles as its setup, and a later one as news', { timeout: 60_000 }, async () => {
    const changes: [string, boolean][] = [];
    const start = starter(serverOf(stdioFixture()), { onListChanged: (kind, setup) => changes.push([kind, setup]) });
    // The fixture registers `ask_user` when a client that can be asked initializes: a tools/list_changed during setup.
    const session = await start({ elicitation: {} }, AbortSignal.timeout(10_000), 'catalog');
    sessions.push(session);
    expect(changes).toEqual([['tools', true]]);
    await session.request('tools/call', { name: 'trigger_tool_change' }, { signal: AbortSignal.timeout(10_000), timeoutMs: 10_000 });
    await until('the announced change', () => changes.length === 2);
    expect(changes[1]).toEqual(['tools', false]);
  });

  it('reports a session that could not start as a StartFailure with the innermost cause', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    const start = starter(serverOf({ url: `http://127.0.0.1:${port}/mcp` }));
    const e: unknown = await start({}, AbortSignal.timeout(10_000), 'catalog').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(StartFailure);
    expect((e as StartFailure).message).toMatch(/ECONNREFUSED|fetch failed/);
  });
});
