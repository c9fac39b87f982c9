/** The wait helper shared by the call and the engine. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { wakeOrAbort } from '../../src/util/abort.js';

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
