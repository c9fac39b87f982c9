/** Unit tests of the primary connection with stand-in sessions and fake timers (its state machine only). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BackendSession } from '../../../src/core/backend/backend-session.js';
import type { Liveness } from '../../../src/core/backend/liveness.js';
import { PrimaryConnection, backoffDelay, type PrimaryConnectionOptions } from '../../../src/core/backend/primary-connection.js';
import { StartFailure } from '../../../src/core/backend/start-failure.js';
import { GatewayError } from '../../../src/errors.js';
import type { Logger } from '../../../src/log.js';

afterEach(() => vi.useRealTimers());

interface FakeSession extends BackendSession {
  verdict: Liveness;
}

/** Just what the primary connection uses of a session. */
function fakeSession(capabilities: Record<string, unknown> = { tools: {} }): FakeSession {
  let closed = false;
  const onClose: (() => void)[] = [];
  const session = {
    verdict: 'alive' as Liveness,
    get closed() {
      return closed;
    },
    serverCapabilities: capabilities,
    serverInfo: { name: 'fake', version: '1' },
    stderrTail: ['last words'],
    liveness: async () => session.verdict,
    onClose(cb: () => void) {
      if (closed) cb();
      else onClose.push(cb);
    },
    async close() {
      closed = true;
      for (const cb of onClose.splice(0)) cb();
    },
  };
  return session as unknown as FakeSession;
}

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const logger = {
    warnings,
    debug() {},
    info() {},
    warn(_obj: object, msg?: string) {
      warnings.push(msg ?? '');
    },
    error() {},
    child: () => logger,
  };
  return logger;
}

/** A primary whose starts take sessions (or errors) from `outcomes` in order. */
function primaryOf(outcomes: (FakeSession | Error)[], extra: Partial<PrimaryConnectionOptions> = {}) {
  const changes: string[] = [];
  const logger = recordingLogger();
  let starts = 0;
  const primary = new PrimaryConnection({
    name: 'b',
    start: async () => {
      const next = outcomes[starts++];
      if (!next) throw new Error('no more outcomes');
      if (next instanceof Error) throw next;
      return next;
    },
    logger,
    listTimeoutMs: 1_000,
    healthCheckMs: 0,
    hungAfterMs: 1_000,
    onConnection: (change) => changes.push(`${change}:${primary.health().state}`),
    ...extra,
  });
  return { primary, changes, logger, starts: () => starts };
}

const reasonOf = (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (e: unknown) => (e instanceof GatewayError ? e.code : String(e)),
  );

describe('PrimaryConnection', () => {
  it('backs off 250 ms doubling per failure, at most 30 s', () => {
    expect([0, 1, 2, 7, 8, 20].map(backoffDelay)).toEqual([250, 500, 1_000, 30_000, 30_000, 30_000]);
  });

  it('connects, and after a loss fails fast until the backoff has passed, then reconnects', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const first = fakeSession();
    const second = fakeSession();
    const { primary, changes, starts } = primaryOf([first, second]);
    expect(primary.health()).toEqual({ name: 'b', state: 'connecting', failures: 0 });
    expect(await primary.session()).toBe(first);
    expect(primary.health()).toEqual({ name: 'b', state: 'up', failures: 0, connectedAt: new Date(1_000_000).toISOString() });
    await first.close();
    expect(primary.up).toBe(false);
    expect(primary.health()).toMatchObject({ state: 'down', failures: 1 });
    expect(await reasonOf(primary.session())).toBe('backend_unavailable');
    expect(starts()).toBe(1);
    await vi.advanceTimersByTimeAsync(250);
    expect(starts()).toBe(2);
    expect(await primary.session()).toBe(second);
    expect(changes).toEqual(['connected:up', 'lost:down', 'connected:up']);
    await primary.close();
  });

  it('takes a session found closed for lost at once, without a second attempt beside the backoff', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const first = fakeSession();
    const { primary, changes, starts } = primaryOf([first, fakeSession()]);
    await primary.session();
    // closing, its close handlers not run yet: what a list meets while a stdio process group exits
    Object.defineProperty(first, 'closed', { value: true });
    expect(await reasonOf(primary.session())).toBe('backend_unavailable');
    expect(changes).toEqual(['connected:up', 'lost:down']);
    expect(primary.state.kind).toBe('backoff');
    expect(starts()).toBe(1);
    await primary.close();
  });

  it('logs each new cause of failure at warn, a repeated one at debug', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const enoent = new StartFailure(new Error('spawn nope ENOENT'), []);
    const refused = new StartFailure(new Error('connect ECONNREFUSED'), []);
    const { primary, logger } = primaryOf([enoent, refused, refused, fakeSession()]);
    await reasonOf(primary.session());
    await vi.advanceTimersByTimeAsync(10_000);
    expect(primary.up).toBe(true);
    expect(logger.warnings.filter((w) => w === 'backend unavailable; retrying with backoff')).toHaveLength(2);
    await primary.close();
  });

  it('reports why a start failed, with its stderr, and counts each failed attempt', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const failure = new StartFailure(new Error('spawn nope ENOENT'), ['usage: nope']);
    const { primary, logger } = primaryOf([failure, failure, fakeSession()]);
    expect(await reasonOf(primary.session())).toBe('backend_unavailable');
    expect(primary.health()).toEqual({ name: 'b', state: 'down', failures: 1, lastError: 'spawn nope ENOENT', stderr: ['usage: nope'] });
    await vi.advanceTimersByTimeAsync(250);
    expect(primary.health()).toMatchObject({ state: 'down', failures: 2 });
    await vi.advanceTimersByTimeAsync(499);
    expect(primary.up).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(primary.health()).toMatchObject({ state: 'up', failures: 0 });
    expect(primary.health().lastError).toBeUndefined();
    // The same cause twice is logged once at warn (the second attempt at debug).
    expect(logger.warnings.filter((w) => w === 'backend unavailable; retrying with backoff')).toHaveLength(1);
    await primary.close();
  });

  it('closes a silent backend, stays silent through failed reconnects until one succeeds, and answers its last capabilities meanwhile', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const first = fakeSession({ tools: {}, prompts: {} });
    const { primary, changes } = primaryOf([first, new Error('connect ETIMEDOUT'), fakeSession({ tools: {} })], { healthCheckMs: 100 });
    await primary.session();
    expect(await primary.capabilities()).toEqual({ tools: {}, prompts: {} });
    first.verdict = 'hung';
    await vi.advanceTimersByTimeAsync(100);
    expect(first.closed).toBe(true);
    expect(primary.silent).toBe(true);
    expect(primary.health()).toMatchObject({ state: 'down', failures: 2, lastError: expect.stringMatching(/^silent on every exchange for 1000 ms/) });
    expect(primary.health().stderr).toEqual(['last words']);
    expect(await primary.capabilities()).toEqual({ tools: {}, prompts: {} });
    await vi.advanceTimersByTimeAsync(500); // the failed reconnect: another cause, still silent
    expect(primary.health()).toMatchObject({ failures: 3, lastError: 'connect ETIMEDOUT' });
    expect(primary.silent).toBe(true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(primary.silent).toBe(false);
    expect(await primary.capabilities()).toEqual({ tools: {} });
    expect(changes).toEqual(['connected:up', 'lost:down', 'connected:up']);
    await primary.close();
  });

  it('closes and reconnects a backend found gone, without taking it for silent', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const first = fakeSession();
    const { primary } = primaryOf([first, fakeSession()]);
    await primary.session();
    first.verdict = 'gone';
    await primary.checkHealth();
    expect(first.closed).toBe(true);
    expect(primary.silent).toBe(false);
    expect(primary.health()).toMatchObject({ state: 'down', failures: 1 });
    expect(primary.health().lastError).toBeUndefined();
    await vi.advanceTimersByTimeAsync(250);
    expect(primary.up).toBe(true);
    await primary.close();
  });

  it('waits for a connection being made no longer than listTimeoutMs', async () => {
    const primary = new PrimaryConnection({
      name: 'b',
      start: (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error))),
      logger: recordingLogger(),
      listTimeoutMs: 50,
      healthCheckMs: 0,
      hungAfterMs: 1_000,
    });
    expect(await reasonOf(primary.within())).toBe('backend_timeout');
    expect(primary.state.kind).toBe('connecting');
    await primary.close();
    expect(await reasonOf(primary.session())).toBe('gateway_closing');
  });

  it('ends a waiting backoff on close, and closes the session it holds', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const session = fakeSession();
    const { primary, starts } = primaryOf([new Error('refused'), session]);
    await primary.session().catch(() => undefined);
    await primary.close();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(starts()).toBe(1);
    expect(primary.state.kind).toBe('closed');
    const { primary: up } = primaryOf([session]);
    await up.session();
    await up.close();
    expect(session.closed).toBe(true);
  });
});
