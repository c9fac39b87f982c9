/**
 * The quiet gap of an MRTR round for a backend whose activity cannot be seen (an HTTP backend; any
 * backend where /proc cannot be read), stretched by the load the gateway's own event loop measures:
 * on a loaded machine every process, the backend's included, runs late, and two requests a backend
 * writes together may reach the gateway that much apart. Measured here, in the Node composition root
 * (node:perf_hooks), and handed to the fronts as a function (fronts/mrtr/rounds.ts `quietGapMs`).
 *
 * Only a call whose operation has been seen asking for things together (an input request made while
 * another was outstanding: core/calls/ask-patterns.ts) waits for more than the floor: its gap is
 * `floorMs` plus LAG_FACTOR times the event loop's recent delay (the largest p99 of the current
 * period and the HISTORY full periods before it), at most `capMs`. Any other round has one request to send, and sends it
 * after the floor and an I/O turn: the loop's p99 is mostly the gateway's own work (at concurrency 1
 * on two cores it made the round over an HTTP backend 2.39× the no-gap round, with no load), which
 * a one-question tool would wait for in every round for nothing.
 *
 * Why the gateway's own loop and not a quieter measure: a worker thread doing nothing but a timer sees
 * how late a sleeping thread gets a core, which the scheduler keeps short (p99 0.2–1.6 ms with a
 * CPU-burning process per core), while a backend preempted between two writes waits as a running
 * process does, far longer; with that measure 1–2 rounds in 100 split at load (spec/notes/mrtr-translation.md).
 * The loop of a process that works, like the backend's, sees those waits too.
 *
 * Measuring starts with the first round that needs a stretched gap: a gateway whose backends are all
 * seen (stdio on Linux), or whose operations ask one thing at a time, never measures.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** The delay histogram's sampling interval (ms): the delay it sees is that timer's lateness. */
const RESOLUTION_MS = 10;
/** How long one period of the histogram lasts before it starts again. */
const PERIOD_MS = 1_000;
/**
 * How many full periods a delay is remembered: load comes in bursts (a CI machine's other jobs, a
 * compaction), and a round in a quiet second between two bursts got the gap of that second (one round
 * in a few hundred split at load in CI, with one period remembered).
 */
const HISTORY = 5;
/** How many times the loop's recent delay the gap adds. */
const LAG_FACTOR = 2;

export interface QuietGap {
  /**
   * The gap now (ms) for a call whose operation asks for things together (ask-patterns.ts) or not: for
   * one that does, the floor stretched by the load; for any other, the floor.
   */
  readonly ms: (asksTogether: boolean) => number;
  /** Stops measuring. Idempotent. */
  close(): void;
}

/**
 * Measures the event loop's delay from the first `ms(true)` until `close()`; `ms(true)` is `floorMs`
 * until the first samples. `periodMs`: how long one period of the histogram lasts (tests shorten it).
 */
export function createQuietGap(floorMs: number, capMs: number, periodMs = PERIOD_MS): QuietGap {
  let monitor: { histogram: IntervalHistogram; period: NodeJS.Timeout } | undefined;
  /** The p99 delay of the last HISTORY full periods, oldest first. */
  const periods: number[] = [];
  let closed = false;
  const start = (): IntervalHistogram => {
    const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    histogram.enable();
    const period = setInterval(() => {
      periods.push(p99Ms(histogram));
      if (periods.length > HISTORY) periods.shift();
      histogram.reset();
    }, periodMs);
    period.unref();
    monitor = { histogram, period };
    return histogram;
  };
  return {
    ms: (asksTogether) => {
      if (closed || !asksTogether) return Math.min(floorMs, capMs);
      const histogram = monitor?.histogram ?? start();
      const delay = Math.max(p99Ms(histogram), ...periods);
      return Math.min(capMs, floorMs + LAG_FACTOR * delay);
    },
    close: () => {
      closed = true;
      if (!monitor) return;
      clearInterval(monitor.period);
      monitor.histogram.disable();
      monitor = undefined;
    },
  };
}

/** The histogram's p99 delay beyond its own interval, in ms (0 without samples). */
function p99Ms(histogram: IntervalHistogram): number {
  if (histogram.count === 0) return 0;
  // Each sample is the whole interval between two ticks: the timer's own RESOLUTION_MS is not delay.
  return Math.max(0, histogram.percentile(99) / 1e6 - RESOLUTION_MS);
}
