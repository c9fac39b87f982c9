/** Requests forwarded to an instance end when that instance is known dead; nothing else is touched. */
import { describe, expect, it } from 'vitest';
import { createForwardWatch } from '../../src/cluster/forward-watch.js';

describe('createForwardWatch', () => {
  it('aborts every request waiting on an instance when it is gone, and only those', () => {
    const watch = createForwardWatch();
    const client = new AbortController();
    const toA = [watch.track('a', client.signal), watch.track('a', new AbortController().signal)];
    const toB = watch.track('b', new AbortController().signal);
    expect(watch.waiting('a')).toBe(2);
    watch.gone('a');
    expect(toA.map((t) => t.life.aborted)).toEqual([true, true]);
    expect(String((toA[0]!.life.reason as Error).message)).toMatch(/gone/);
    expect(toB.life.aborted).toBe(false);
    expect(watch.waiting('a')).toBe(0);
    expect(client.signal.aborted).toBe(false); // the client's own request is answered here, not aborted
  });

  it('follows the client, and forgets a request whose answer ended', () => {
    const watch = createForwardWatch();
    const client = new AbortController();
    const t = watch.track('a', client.signal);
    client.abort(new Error('client left'));
    expect(t.life.aborted).toBe(true);
    t.dispose();
    expect(watch.waiting('a')).toBe(0);
    const later = watch.track('a', new AbortController().signal);
    later.dispose();
    watch.gone('a');
    expect(later.life.aborted).toBe(false);
  });
});
