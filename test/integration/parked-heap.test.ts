/**
 * Parked calls over an HTTP backend stay lean (issue 30): 1,000 parked calls, measured in a process
 * of their own with `--expose-gc` (test/fixtures/parked-heap-probe.ts), cost at most BOUND_BYTES of
 * heap each. Before the backend leg was ours (the SDK transport's fetch and web streams) the probe
 * read about 80 KiB per call; then about 24-26 KiB (commit 31af5ce); once the backend path kept no
 * AbortSignal, closure or suspended async frame of its own per parked call, 18.3-18.6 KiB (1,000
 * parked, ce7fefe); since its requests and open streams keep no hidden class, once-wrapper, decoder
 * or raw head of their own, 16.4-16.6 KiB (15.9 later); since the backend's requests for input are
 * answered beside the SDK's dispatch (backend-requests.ts: no AbortController, `extra` or promise
 * chain of the SDK's per parked call), 13.8-14.0 KiB. The bound sits above that with a margin for
 * noise and below the figure of before (which fails it), so the gain cannot be lost silently. 1,000 calls, not
 * 200: at 200 the figure moved by about ±0.7 KiB from run to run, as much as the gain it guards; at
 * 1,000 by about ±0.15 KiB. `npm run bench` reports the figure against the 16 KiB target.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runHeapProbe } from '../helpers/heap-probe.js';

const PROBE = fileURLToPath(new URL('../fixtures/parked-heap-probe.ts', import.meta.url));
const CALLS = 1000;
const BOUND_BYTES = 15 * 1024;

interface HeapFigure {
  parked: number;
  perCallBytes: number;
  errors: number;
}

describe('parked calls over an HTTP backend', () => {
  it(`cost at most ${BOUND_BYTES / 1024} KiB of gateway heap each (${CALLS} parked, after full collections)`, async () => {
    const figure = await runHeapProbe<HeapFigure>(PROBE, { PROBE_CALLS: String(CALLS) });
    expect(figure).toMatchObject({ parked: CALLS, errors: 0 });
    expect(figure.perCallBytes).toBeLessThanOrEqual(BOUND_BYTES);
  }, 120_000);
});
