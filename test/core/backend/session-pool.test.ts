/** Unit tests of the session pool with stand-in sessions (the pool's own bookkeeping only). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import type { Lease } from '../../../src/core/backend/session-pool.js';
import type { BackendSession } from '../../../src/core/backend/backend-session.js';
import type { CallChannel } from '../../../src/core/backend/port.js';
import { SessionPool } from '../../../src/core/backend/session-pool.js';

/** Just what the pool uses of a session. */
function fakeSession(): BackendSession {
  let bound: CallChannel | undefined;
  let closed = false;
  const onClose: (() => void)[] = [];
  return {
    get busy() {
      return bound !== undefined;
    },
    get exclusiveRun() {
      return bound;
    },
    get closed() {
      return closed;
    },
    lastUsed: Date.now(),
    bindExclusive(c: CallChannel) {
      if (bound) throw new Error('session is busy');
      bound = c;
    },
    release(c: CallChannel) {
      if (bound === c) bound = undefined;
    },
    onClose(cb: () => void) {
      onClose.push(cb);
    },
    async close() {
      closed = true;
      for (const cb of onClose.splice(0)) cb();
    },
  } as unknown as BackendSession;
}

const channel = (id: string): CallChannel => ({
  id,
  requestInput: async () => ({}),
  progress: () => undefined,
  log: () => undefined,
  notification: () => undefined,
});
const signal = (): AbortSignal => new AbortController().signal;

describe('SessionPool', () => {
  it('hands the slot of a session that failed to start to the caller queued behind it', async () => {
    let attempt = 0;
    const pool = new SessionPool({
      name: 'b',
      shared: false,
      maxSessions: 1,
      waitMs: 60_000,
      idleMs: 60_000,
      create: async () => {
        attempt++;
        await new Promise((r) => setTimeout(r, 20));
        if (attempt === 1) throw new Error('spawn failed');
        return fakeSession();
      },
    });
    const a = pool.acquire('k', channel('a'), signal());
    const b = pool.acquire('k', channel('b'), signal());
    await expect(a).rejects.toThrow('spawn failed');
    const lease = await b; // served at once, not after the 60 s wait deadline
    expect(pool.stats).toMatchObject({ sessions: 1, busy: 1, waiting: 0 });
    lease.release();
    await pool.close();
  });

  it('never hands a session started for one caller to another before it is bound', async () => {
    const pool = new SessionPool({ name: 'b', shared: false, maxSessions: 2, waitMs: 60_000, idleMs: 60_000, create: async () => fakeSession() });
    const [x, y] = await Promise.all([pool.acquire('k', channel('x'), signal()), pool.acquire('k', channel('y'), signal())]);
    expect(x.session).not.toBe(y.session);
    x.release();
    y.release();
    await pool.close();
  });

  it('keeps a spare ready and waits for every start when closing', async () => {
    let started = 0;
    let closedAll = false;
    // The spare's start ends when the test says so: close() must wait for it however slow the machine.
    let spareStarts!: () => void;
    const spareStarted = new Promise<void>((r) => (spareStarts = r));
    const pool = new SessionPool({
      name: 'b',
      shared: false,
      maxSessions: 4,
      waitMs: 60_000,
      idleMs: 60_000,
      spares: 1,
      create: async () => {
        if (++started > 1) await spareStarted;
        return fakeSession();
      },
    });
    const lease = await pool.acquire('k', channel('x'), signal());
    expect(started).toBe(2); // the caller's session and a spare, starting in the background
    const closing = pool.close().then(() => (closedAll = true));
    await new Promise((r) => setImmediate(r)); // what close() does without the spare has run
    expect(closedAll).toBe(false); // the spare is still starting
    spareStarts();
    await closing;
    lease.release();
  });

  /** An exclusive pool that starts one session at a time, each start finished by hand (`starts[i](session)`). */
  function oneStartAtATime(spares?: number) {
    const starts: ((s: BackendSession) => void)[] = [];
    const pool = new SessionPool({
      name: 'b',
      shared: false,
      maxSessions: 4,
      maxStarts: 1,
      ...(spares !== undefined ? { spares } : {}),
      waitMs: 60_000,
      idleMs: 60_000,
      create: () => new Promise<BackendSession>((resolve) => starts.push(resolve)),
    });
    return { pool, starts };
  }

  it('starts at most maxStarts sessions at once; the callers beyond wait and take the first session ready', async () => {
    const { pool, starts } = oneStartAtATime();
    const a = pool.acquire('k', channel('a'), signal());
    const b = pool.acquire('k', channel('b'), signal());
    const c = pool.acquire('k', channel('c'), signal());
    await new Promise((r) => setImmediate(r));
    expect(starts).toHaveLength(1); // one start at a time: b and c queue
    expect(pool.stats).toMatchObject({ connecting: 1, waiting: 2 });
    starts[0]!(fakeSession());
    const leaseA = await a;
    await new Promise((r) => setImmediate(r));
    expect(starts).toHaveLength(2); // a's start ended: the next one begins, for b
    expect(pool.stats).toMatchObject({ connecting: 1, waiting: 1 });
    // a's session frees up before b's start ends: c (queued behind the start limit) takes it at once
    leaseA.release();
    const leaseC = await c;
    expect(leaseC.session).toBe(leaseA.session);
    starts[1]!(fakeSession());
    const leaseB = await b;
    expect(leaseB.session).not.toBe(leaseA.session);
    expect(starts).toHaveLength(2);
    leaseB.release();
    leaseC.release();
    await pool.close();
  });

  it('starts no spare while a caller waits for a start slot', async () => {
    const { pool, starts } = oneStartAtATime(1);
    const a = pool.acquire('k', channel('a'), signal());
    const b = pool.acquire('k', channel('b'), signal());
    await new Promise((r) => setImmediate(r));
    starts[0]!(fakeSession());
    const leaseA = await a;
    await new Promise((r) => setImmediate(r));
    // the start slot went to b, not to a spare for a's key
    expect(starts).toHaveLength(2);
    expect(pool.stats).toMatchObject({ connecting: 1, waiting: 0 });
    starts[1]!(fakeSession());
    const leaseB = await b;
    await new Promise((r) => setImmediate(r));
    expect(starts).toHaveLength(3); // nobody waits now: the spare starts
    starts[2]!(fakeSession());
    leaseA.release();
    leaseB.release();
    await pool.close();
  });

  describe('reclaiming the session of a call that waits for its client', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** A call's channel that may wait for its client (`waitingSince`); `reclaim` releases its lease, as a cancelled call does. */
    function parkable(id: string) {
      const state: { since: number | undefined; lease: Lease | undefined; reclaimed: unknown[] } = { since: undefined, lease: undefined, reclaimed: [] };
      const ch: CallChannel = {
        ...channel(id),
        waitingSince: () => state.since,
        reclaim: (reason) => {
          state.reclaimed.push(reason);
          state.since = undefined;
          state.lease?.release();
        },
      };
      return { ch, state };
    }

    function pool(options: { maxSessions: number; reclaimAfterMs: number; maxPerGroup?: number; onReclaim?: () => void }) {
      return new SessionPool({
        name: 'b',
        shared: false,
        waitMs: 60_000,
        idleMs: 600_000,
        create: async () => fakeSession(),
        groupOf: (key) => key,
        ...options,
      });
    }

    it('cancels the call that has waited longest, once it has waited reclaimAfterMs, and hands its session to the caller that queued', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      let counted = 0;
      const p = pool({ maxSessions: 2, reclaimAfterMs: 5_000, onReclaim: () => counted++ });
      const [a, b] = [parkable('a'), parkable('b')];
      a.state.lease = await p.acquire('k', a.ch, signal());
      b.state.lease = await p.acquire('k', b.ch, signal());
      b.state.since = Date.now();
      vi.advanceTimersByTime(1_000);
      a.state.since = Date.now(); // b has waited 1 s longer
      const c = p.acquire('k', channel('c'), signal());
      await vi.advanceTimersByTimeAsync(3_999); // b has waited 4,999 ms: nobody is cancelled yet
      expect(b.state.reclaimed).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(b.state.reclaimed).toEqual([expect.any(GatewayError)]);
      expect((b.state.reclaimed[0] as GatewayError).code).toBe('call_reclaimed');
      expect(a.state.reclaimed).toEqual([]);
      expect(counted).toBe(1);
      expect((await c).session).toBe(b.state.lease.session);
      await p.close();
    });

    it('cancels no call that is working, nor any when reclaimAfterMs is 0: the caller waits as before', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      for (const [reclaimAfterMs, waiting] of [
        [1_000, false],
        [0, true],
      ] as const) {
        const p = pool({ maxSessions: 1, reclaimAfterMs });
        const a = parkable('a');
        a.state.lease = await p.acquire('k', a.ch, signal());
        if (waiting) a.state.since = Date.now();
        const c = p.acquire('k', channel('c'), signal()).then(
          () => 'served',
          (e: unknown) => (e as GatewayError).code,
        );
        await vi.advanceTimersByTimeAsync(60_000);
        expect(await c).toBe('pool_exhausted');
        expect(a.state.reclaimed).toEqual([]);
        await p.close();
      }
    });

    it("takes only from the caller's own group when that group holds its whole share", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      const p = pool({ maxSessions: 4, maxPerGroup: 1, reclaimAfterMs: 1_000 });
      const [other, mine] = [parkable('other'), parkable('mine')];
      other.state.lease = await p.acquire('g2', other.ch, signal());
      other.state.since = Date.now(); // waited longest, but another group's: freeing it would not serve g1
      mine.state.lease = await p.acquire('g1', mine.ch, signal());
      await vi.advanceTimersByTimeAsync(500);
      mine.state.since = Date.now();
      const c = p.acquire('g1', channel('c'), signal());
      await vi.advanceTimersByTimeAsync(1_000);
      expect(other.state.reclaimed).toEqual([]);
      expect(mine.state.reclaimed).toHaveLength(1);
      expect((await c).session).toBe(mine.state.lease.session);
      await p.close();
    });

    it('looks again when a hand-out fills the pool: a caller that queued for a start slot is served by a reclaim, not after reclaimAfterMs', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      const starts: ((s: BackendSession) => void)[] = [];
      const p = new SessionPool({
        name: 'b',
        shared: false,
        maxSessions: 3,
        maxStarts: 1,
        waitMs: 60_000,
        idleMs: 600_000,
        reclaimAfterMs: 30_000,
        create: () => new Promise<BackendSession>((resolve) => starts.push(resolve)),
      });
      const parked = parkable('parked');
      const first = p.acquire('k', parked.ch, signal());
      await vi.advanceTimersByTimeAsync(0);
      starts[0]!(fakeSession());
      parked.state.lease = await first;
      parked.state.since = Date.now();
      await vi.advanceTimersByTimeAsync(31_000); // the parked call is past reclaimAfterMs
      const x = p.acquire('k', channel('x'), signal()); // starts the second session
      const w1 = p.acquire('k', channel('w1'), signal()); // queued for the start slot: there is room
      const w2 = p.acquire('k', channel('w2'), signal());
      await vi.advanceTimersByTimeAsync(0);
      expect(parked.state.reclaimed).toEqual([]);
      starts[1]!(fakeSession()); // x's session: w1 takes the start slot for the last one, and the pool is full
      await x;
      await vi.advanceTimersByTimeAsync(0);
      expect(parked.state.reclaimed).toHaveLength(1); // at once for w2, not 30 s later
      expect((await w2).session).toBe(parked.state.lease.session);
      starts[2]!(fakeSession());
      await w1;
      await p.close();
    });

    it('reads each session once a look, however many callers are queued (nothing waits for its client here)', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      const p = pool({ maxSessions: 4, reclaimAfterMs: 60_000 });
      let reads = 0;
      const working = (id: string): CallChannel => ({
        ...channel(id),
        waitingSince: () => {
          reads++;
          return undefined;
        },
        reclaim: () => undefined,
      });
      for (let i = 0; i < 4; i++) await p.acquire('k', working(`busy-${i}`), signal());
      const queued = Array.from({ length: 200 }, (_, i) => p.acquire('k', channel(`q-${i}`), signal()).catch(() => undefined));
      // One look per caller queued, each reading the 4 sessions: not the queue times the sessions (80,400 reads).
      expect(reads).toBeLessThanOrEqual(200 * 4);
      await p.close();
      await Promise.all(queued);
    });
  });
});
