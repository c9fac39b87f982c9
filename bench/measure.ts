/**
 * Load and resource measurement for `npm run bench`: a closed-loop load generator (fixed concurrency,
 * warm-up, fixed number of calls), percentiles, medians with spread, and a child process's CPU time
 * and resident memory read from /proc (Linux; elsewhere those figures are left out).
 */
import { readFileSync } from 'node:fs';

export interface LoadResult {
  readonly calls: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly callsPerSec: number;
  readonly errors: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

/** Runs `call` `total` times with `concurrency` in flight (after `warmup` untimed calls). */
export async function runLoad(call: () => Promise<void>, opts: { concurrency: number; total: number; warmup: number }): Promise<LoadResult> {
  for (let i = 0; i < opts.warmup; i += opts.concurrency) {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, opts.warmup - i) }, () => call()));
  }
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < opts.total) {
      next++;
      const t0 = performance.now();
      try {
        await call();
        latencies.push(performance.now() - t0);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, () => worker()));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { calls: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), callsPerSec: latencies.length / elapsed, errors };
}

/** Median and spread of repeated runs of one figure. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export function spread(values: readonly number[]): Spread {
  const s = [...values].sort((a, b) => a - b);
  return { median: percentile(s, 50), min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN };
}

/** CPU time (user + system) of `pid` in milliseconds, or undefined where /proc is not available. */
export function cpuTimeMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** Resident set size of `pid` in bytes, or undefined where /proc is not available. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
