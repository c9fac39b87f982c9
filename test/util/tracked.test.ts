import { describe, expect, it } from 'vitest';
import { createDeferred } from '../../src/util/deferred.js';
import { Tracked } from '../../src/util/tracked.js';

describe('Tracked', () => {
  it('settles only when every tracked promise has, failures and work added meanwhile included', async () => {
    const work = new Tracked();
    const a = createDeferred<void>();
    const b = createDeferred<void>();
    work.add(a.promise);
    let done = false;
    const settled = work.settled().then(() => (done = true));
    work.add(b.promise);
    a.reject(new Error('failed close'));
    await Promise.resolve();
    await a.promise.catch(() => undefined);
    expect(work.size).toBe(1);
    expect(done).toBe(false);
    b.resolve();
    await settled;
    expect(done).toBe(true);
    expect(work.size).toBe(0);
  });

  it('keeps nothing once its work has settled', async () => {
    const work = new Tracked();
    for (let i = 0; i < 100; i++) work.add(Promise.resolve(i));
    await work.settled();
    expect(work.size).toBe(0);
  });
});
