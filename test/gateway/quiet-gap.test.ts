/**
 * The quiet gap of an MRTR round for a backend whose activity cannot be seen (src/gateway/quiet-gap.ts):
 * its floor before any delay is measured, its cap, closing; that it grows with the event loop's delay
 * for an operation that asks for things together and stays at its floor for any other; and that its
 * timer never holds the process open. The bench shows what it costs (`npm run bench -- --only mrtr`,
 * the HTTP backend rows).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createQuietGap, type QuietGap } from '../../src/gateway/quiet-gap.js';

let gaps: QuietGap[] = [];
afterEach(() => {
  for (const gap of gaps) gap.close();
  gaps = [];
});
const gapOf = (floorMs: number, capMs: number): QuietGap => {
  const gap = createQuietGap(floorMs, capMs);
  gaps.push(gap);
  return gap;
};
const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('the quiet gap of a backend whose activity cannot be seen', () => {
  it('is its floor until the event loop has been measured, and never more than its cap', () => {
    expect(gapOf(1, 100).ms(true)).toBe(1);
    expect(gapOf(50, 20).ms(true)).toBe(20);
    expect(gapOf(0, 100).ms(true)).toBe(0);
    expect(gapOf(50, 20).ms(false)).toBe(20);
  });

  it('is its floor (within its cap) once closed, and closing twice is harmless', () => {
    const gap = gapOf(3, 100);
    gap.ms(true); // starts measuring
    gap.close();
    gap.close();
    expect(gap.ms(true)).toBe(3);
    expect(gapOf(7, 5).ms(true)).toBe(5);
  });

  it('grows with the event loop delay for an operation that asks for things together, and for no other', async () => {
    const gap = gapOf(1, 1_000);
    expect(gap.ms(false)).toBe(1);
    gap.ms(true); // starts measuring
    // The loop late by 40 ms again and again: its p99 delay is ~30 ms at least, the gap 2 × that + 1.
    for (let i = 0; i < 10; i++) {
      const until = performance.now() + 40;
      while (performance.now() < until);
      await delay(12);
    }
    expect(gap.ms(true)).toBeGreaterThanOrEqual(41);
    expect(gap.ms(false), 'one request at a time: nothing to wait for, whatever the load').toBe(1);
  });

  it('remembers a burst of load for a few periods after it, then forgets it', async () => {
    // Periods of 100 ms (two of them hold a burst of 250 ms blocks, whatever order the timers run in
    // after a block), and waits of whole periods: a machine busy with other work (CI) neither hides the
    // burst nor ages it faster.
    const period = 100;
    const gap = createQuietGap(1, 1_000, period);
    gaps.push(gap);
    gap.ms(true); // starts measuring
    // The loop late by 250 ms again and again: its p99 delay ~240 ms, the gap 2 × that + 1. (That large,
    // so that no stall of a loaded machine in the quiet periods after it comes near it.)
    for (let i = 0; i < 3; i++) {
      const until = performance.now() + 250;
      while (performance.now() < until);
      await delay(12);
    }
    expect(gap.ms(true)).toBeGreaterThanOrEqual(401);
    // Two periods later: the burst is still remembered (one period was, before).
    await delay(2 * period + 20);
    expect(gap.ms(true)).toBeGreaterThanOrEqual(401);
    // More periods than it remembers (5), a few to spare.
    await delay(9 * period);
    expect(gap.ms(true)).toBeLessThan(401);
  });

  it('measures with a timer that does not hold the process open, and leaves none once closed', () => {
    const before = timers();
    const gap = gapOf(1, 100);
    gap.ms(true); // starts measuring: its period timer is unref'd
    expect(timers()).toBe(before);
    gap.close();
    expect(timers()).toBe(before);
  });
});
