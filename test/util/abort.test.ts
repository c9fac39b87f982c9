/** The wait helper shared by the call and the engine. */
import { describe, expect, it } from 'vitest';
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
});
