/**
 * The quiet gap of an MRTR round for a backend whose activity cannot be seen (src/gateway/quiet-gap.ts):
 * its floor before any delay is measured, its cap, that it measures nothing until first asked, and that
 * closing it stops the measuring. What it adds under load is read from the event loop (node:perf_hooks),
 * which a test cannot set; the bench shows what it costs (`npm run bench -- --only mrtr`, the HTTP
 * backend rows).
 */
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

describe('the quiet gap of a backend whose activity cannot be seen', () => {
  it('is its floor until the event loop has been measured, and never more than its cap', () => {
    expect(gapOf(1, 100).ms()).toBe(1);
    expect(gapOf(50, 20).ms()).toBe(20);
    expect(gapOf(0, 100).ms()).toBe(0);
  });

  it('is its floor (within its cap) once closed, and closing twice is harmless', () => {
    const gap = gapOf(3, 100);
    gap.ms(); // starts measuring
    gap.close();
    gap.close();
    expect(gap.ms()).toBe(3);
    expect(gapOf(7, 5).ms()).toBe(5);
  });

  it('measures with a timer that does not hold the process open, and leaves none once closed', () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const gap = gapOf(1, 100);
    gap.ms(); // starts measuring: its period timer is unref'd
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBe(before);
    gap.close();
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBe(before);
  });
});
