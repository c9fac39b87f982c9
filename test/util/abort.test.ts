/** The wait helper shared by the call and the engine. */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { anySignal, raceSignal, wakeOrAbort, withinDeadline } from '../../src/util/abort.js';

describe('wakeOrAbort', () => {
  it('resolves when woken, rejects on abort (also when already aborted) and leaves no waker behind', async () => {
    const waiters = new Set<() => void>();
    const woken = wakeOrAbort(waiters, new AbortController().signal);
    for (const w of [...waiters]) w();
    await expect(woken).resolves.toBeUndefined();
    const ac = new AbortController();
    const aborted = wakeOrAbort(waiters, ac.signal);
    ac.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
    await expect(wakeOrAbort(waiters, AbortSignal.abort(new Error('before')))).rejects.toThrow('before');
    expect(waiters.size).toBe(1); // only the first waker, which its owner removes when it wakes it
  });

  describe('within a time', () => {
    afterEach(() => vi.useRealTimers());

    it('resolves once the time has passed, taking its waker out and telling when the set is empty', async () => {
      vi.useFakeTimers();
      const waiters = new Set<() => void>();
      let emptied = 0;
      const ac = new AbortController();
      let settled = false;
      const waited = wakeOrAbort(waiters, ac.signal, () => emptied++, 5).then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(4);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await waited;
      expect(waiters.size).toBe(0);
      expect(emptied).toBe(1);
      ac.abort(new Error('later')); // no listener is left to act on it
      expect(vi.getTimerCount()).toBe(0);
    });

    it('when woken or aborted first, leaves no timer behind', async () => {
      vi.useFakeTimers();
      const waiters = new Set<() => void>();
      const woken = wakeOrAbort(waiters, new AbortController().signal, undefined, 1_000);
      for (const w of [...waiters]) w();
      await expect(woken).resolves.toBeUndefined();
      const ac = new AbortController();
      const aborted = wakeOrAbort(waiters, ac.signal, undefined, 1_000);
      ac.abort(new Error('gone'));
      await expect(aborted).rejects.toThrow('gone');
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});

describe('withinDeadline', () => {
  afterEach(() => vi.useRealTimers());

  it("aborts the work's signal past the deadline and fails with the deadline's error, or with the parent's reason when it aborted first", async () => {
    vi.useFakeTimers();
    const late = withinDeadline(
      new AbortController().signal,
      50,
      () => new Error('too late'),
      (signal) => raceSignal(new Promise<never>(() => undefined), signal),
    );
    const expectation = expect(late).rejects.toThrow('too late');
    await vi.advanceTimersByTimeAsync(50);
    await expectation;
    const parent = new AbortController();
    const cancelled = withinDeadline(
      parent.signal,
      50,
      () => new Error('too late'),
      (signal) => raceSignal(new Promise<never>(() => undefined), signal),
    );
    parent.abort(new Error('cancelled'));
    await expect(cancelled).rejects.toThrow('cancelled');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('gives the work its result, leaving no timer and no listener on the parent', async () => {
    vi.useFakeTimers();
    const parent = new AbortController();
    const seen: AbortSignal[] = [];
    const result = await withinDeadline(
      parent.signal,
      50,
      () => new Error('too late'),
      async (signal) => {
        seen.push(signal);
        return 7;
      },
    );
    expect(result).toBe(7);
    expect(vi.getTimerCount()).toBe(0);
    parent.abort(); // after the work: its signal is no longer linked
    expect(seen[0]!.aborted).toBe(false);
  });
});

describe('raceSignal', () => {
  it('on a signal aborted already, rejects at once and leaves no rejection of the lost promise unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      let fail!: (e: Error) => void;
      const lost = new Promise<never>((_, reject) => (fail = reject));
      const aborted = AbortSignal.abort(new Error('gone'));
      await expect(raceSignal(lost, aborted)).rejects.toThrow('gone');
      fail(new Error('late failure'));
      await new Promise((r) => setTimeout(r, 10)); // unhandled rejections are reported after a turn
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('anySignal', () => {
  /** A full collection, in this process (the flag set now gives a fresh context its `gc`). */
  const collect = (): void => {
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
  };

  it('aborts on a timeout that only it refers to, a full collection in between (a plain AbortSignal.any never does: nodejs/node#57736)', async () => {
    const parent = new AbortController();
    const reasons: string[] = [];
    const count = 20;
    const all = new Promise<void>((resolve) => {
      for (let i = 0; i < count; i++) {
        const signal = anySignal([parent.signal, AbortSignal.timeout(50)]);
        signal.addEventListener(
          'abort',
          () => {
            reasons.push((signal.reason as Error).name);
            if (reasons.length === count) resolve();
          },
          { once: true },
        );
      }
    });
    collect();
    await new Promise((r) => setImmediate(r));
    collect();
    // The bound only turns a lost timeout into a failure rather than a hang.
    await raceSignal(all, AbortSignal.timeout(5_000)).catch(() => undefined);
    expect(reasons).toEqual(Array(count).fill('TimeoutError'));
    expect(parent.signal.aborted).toBe(false);
  });

  it('aborts with the first source that does, as AbortSignal.any', () => {
    const a = new AbortController();
    const b = new AbortController();
    const signal = anySignal([a.signal, b.signal]);
    b.abort(new Error('b first'));
    a.abort(new Error('a'));
    expect((signal.reason as Error).message).toBe('b first');
  });
});
