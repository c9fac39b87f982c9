/**
 * Load and resource measurement for `npm run bench`: a closed-loop load generator (fixed concurrency,
 * warm-up, fixed number of calls), percentiles, medians with spread, and the CPU time and resident
 * memory of a process and its descendants read from /proc (Linux; elsewhere those figures are left out).
 */
import { readdirSync, readFileSync } from 'node:fs';

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

/** The raw outcome of a closed-loop load: each timed call's latency (ms, in the order they ended), the calls that failed, the wall time. */
export interface TimedLoad {
  readonly latencies: number[];
  readonly errors: number;
  readonly elapsedMs: number;
}

/**
 * Runs `call` `total` times with `concurrency` in flight. A call that resolves to a number reports its
 * own latency in ms (the part of it that is measured); otherwise the whole call is timed.
 */
export async function timedLoad(call: () => Promise<void | number>, opts: { concurrency: number; total: number }): Promise<TimedLoad> {
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  const lane = async (): Promise<void> => {
    while (next < opts.total) {
      next++;
      const t0 = performance.now();
      try {
        const own = await call();
        latencies.push(typeof own === 'number' ? own : performance.now() - t0);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, () => lane()));
  return { latencies, errors, elapsedMs: performance.now() - started };
}

/** A load's percentiles and rate (`latencies` is sorted in place). */
export function summarize(load: TimedLoad): LoadResult {
  const latencies = load.latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    callsPerSec: latencies.length / (load.elapsedMs / 1000),
    errors: load.errors,
  };
}

/** `timedLoad` after `warmup` untimed calls, summarised. */
export async function runLoad(call: () => Promise<void | number>, opts: { concurrency: number; total: number; warmup: number }): Promise<LoadResult> {
  for (let i = 0; i < opts.warmup; i += opts.concurrency) {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, opts.warmup - i) }, () => call()));
  }
  return summarize(await timedLoad(call, opts));
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

/** The CPU ms one thread has run: the first field of its schedstat, in nanoseconds (throws where /proc has none). */
function threadCpuMs(pid: number | 'self', tid: string): number {
  return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

/**
 * CPU time (user + system) of `pid` in milliseconds, or undefined where /proc is not available: the sum
 * of its threads' run time in nanoseconds (`/proc/<pid>/task/<tid>/schedstat`; Node's threads live as
 * long as the process), else the process's clock ticks (`/proc/<pid>/stat`, 10 ms steps).
 */
export function cpuTimeMs(pid: number): number | undefined {
  try {
    let ms = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ms += threadCpuMs(pid, tid);
    if (Number.isFinite(ms) && ms > 0) return ms;
  } catch {
    // No schedstat: the coarser ticks below.
  }
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** The live descendants of `pid` (children of every thread, recursively); empty where /proc has no `children`. */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number): void => {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const tid of tids) {
      let kids = '';
      try {
        kids = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const k of kids.split(' ').filter(Boolean).map(Number)) {
        out.push(k);
        visit(k);
      }
    }
  };
  visit(pid);
  return out;
}

/**
 * Which processes a figure's CPU is read from: the system under test (a gateway, a peer, the floor)
 * and its backend (given, and every descendant of the system under test).
 */
export interface CpuWatch {
  readonly sut: readonly number[];
  readonly backend?: readonly number[];
}

type CpuSample = { sut: Map<number, number>; backend: Map<number, number> };

function sampleCpu(watch: CpuWatch): CpuSample {
  const read = (pids: Iterable<number>): Map<number, number> => {
    const m = new Map<number, number>();
    for (const p of pids) {
      const ms = cpuTimeMs(p);
      if (ms !== undefined) m.set(p, ms);
    }
    return m;
  };
  const backend = new Set([...(watch.backend ?? []), ...[...watch.sut, ...(watch.backend ?? [])].flatMap(descendants)]);
  return { sut: read(watch.sut), backend: read(backend) };
}

/** CPU ms spent between two samples (a process that started in between counts from 0). */
function spent(before: Map<number, number>, after: Map<number, number>): number | undefined {
  if (after.size === 0) return undefined;
  let ms = 0;
  for (const [p, t] of after) ms += t - (before.get(p) ?? 0);
  return ms;
}

/**
 * The CPU ms the calling thread has run: the bench's main thread (where the client libraries and the
 * load loop run, one thread: what bounds how many calls the client can make), or a client thread of
 * its own (client-worker.ts); the whole process's where /proc cannot tell threads apart.
 */
export function clientCpuMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  } catch {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
}

/**
 * A figure: its load result; CPU ms per call of the client (this process's main thread: the client
 * library and the load loop); and, where /proc tells, of the system and of its backend.
 */
export interface Figure extends LoadResult {
  readonly clientCpuMsPerCall?: number;
  readonly cpuMsPerCall?: number;
  readonly backendCpuMsPerCall?: number;
}

/**
 * What makes a figure's calls: untimed ones (`warm`), and timed ones with the CPU ms the client spent
 * on them (`run`). The client is this process's main thread (`mainThreadLoad`) or threads of its own
 * (client-threads.ts).
 */
export interface Load {
  warm(opts: { concurrency: number; total: number }): Promise<void>;
  run(opts: { concurrency: number; total: number }): Promise<{ load: TimedLoad; clientCpuMs: number }>;
}

/** `call` made on this process's main thread, whose CPU is the client's. */
export function mainThreadLoad(call: () => Promise<void | number>): Load {
  return {
    warm: async (opts) => void (await timedLoad(call, opts)),
    async run(opts) {
      const before = clientCpuMs();
      const load = await timedLoad(call, opts);
      return { load, clientCpuMs: clientCpuMs() - before };
    },
  };
}

/** Warms up, then runs the load with the CPU of `watch`'s processes read before and after. */
export function measureFigure(
  call: () => Promise<void | number>,
  opts: { concurrency: number; total: number; warmup: number; watch?: CpuWatch },
): Promise<Figure> {
  return measureLoad(mainThreadLoad(call), opts);
}

/** `measureFigure` for any `Load`. */
export async function measureLoad(load: Load, opts: { concurrency: number; total: number; warmup: number; watch?: CpuWatch }): Promise<Figure> {
  if (opts.warmup > 0) await load.warm({ concurrency: opts.concurrency, total: opts.warmup });
  const before = opts.watch ? sampleCpu(opts.watch) : undefined;
  const ran = await load.run({ concurrency: opts.concurrency, total: opts.total });
  const r = summarize(ran.load);
  if (r.calls === 0) return r;
  const clientCpu = { clientCpuMsPerCall: ran.clientCpuMs / r.calls };
  if (!before || !opts.watch) return { ...r, ...clientCpu };
  const after = sampleCpu(opts.watch);
  const sut = spent(before.sut, after.sut);
  const backend = spent(before.backend, after.backend);
  return {
    ...r,
    ...clientCpu,
    ...(sut !== undefined && opts.watch.sut.length > 0 ? { cpuMsPerCall: sut / r.calls } : {}),
    ...(backend !== undefined ? { backendCpuMsPerCall: backend / r.calls } : {}),
  };
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
