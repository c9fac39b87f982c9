import { describe, expect, it } from 'vitest';
import { CloserStack } from '../../src/util/closer-stack.js';

describe('CloserStack', () => {
  it('closes last opened first, each awaited before the next, and runs the rest when one fails', async () => {
    const closers = new CloserStack();
    const order: string[] = [];
    closers.push('cluster', () => void order.push('cluster'));
    closers.push('backends', async () => {
      await Promise.resolve();
      order.push('backends');
    });
    closers.push('broken', () => {
      throw new Error('boom');
    });
    closers.push('fronts', () => void order.push('fronts'));
    const failed: string[] = [];
    await closers.close((what) => failed.push(what));
    expect(order).toEqual(['fronts', 'backends', 'cluster']);
    expect(failed).toEqual(['broken']);
  });

  it('is idempotent and refuses to open anything once closing', async () => {
    const closers = new CloserStack();
    let closed = 0;
    closers.push('one', () => void closed++);
    const first = closers.close();
    expect(closers.close()).toBe(first);
    await first;
    expect(closed).toBe(1);
    expect(() => closers.push('late', () => undefined)).toThrow('closing');
  });

  it('unwinds what a failed start-up built, then rethrows its error', async () => {
    const closers = new CloserStack();
    const order: string[] = [];
    closers.push('a', () => void order.push('a'));
    closers.push('b', () => void order.push('b'));
    const error = new Error('step failed');
    await expect(closers.unwind(error)).rejects.toBe(error);
    expect(order).toEqual(['b', 'a']);
  });
});
