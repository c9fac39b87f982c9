/**
 * The bench's command line and its sizes: how many calls per figure, repeats, parked calls, which
 * phases and systems run. One place, so every phase sizes its figures the same way.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const quick = process.argv.includes('--quick');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

export const OUT = arg('--out') ?? join(ROOT, 'bench', 'results', `bench-${quick ? 'quick' : 'full'}.json`);
/** Each figure is measured this many times, the systems alternately; medians with spread. */
export const REPEATS = quick ? 1 : 3;
/**
 * The figure of every system for pass-through calls (16 B at concurrency 1, 16 and 64, 64 KiB) is
 * context, read by no target since each has its own figure: measured twice (the spread shows both).
 */
export const CONTEXT_REPEATS = quick ? 1 : 2;
/** `--gateway-dist dir` measures another build of the gateway (a before/after comparison on one machine). */
export const GATEWAY_DIST = arg('--gateway-dist') ?? join(ROOT, 'dist');
/** The Redis the cluster figure uses (`.ci/run` provides one). */
export const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

const only = arg('--only')?.split(',');
// A bare comma separates names; a comma and a space belongs to one (`direct, a process per call`).
const systems = arg('--systems')?.split(/,(?! )/);
export type Phase = 'pass-through' | 'profile' | 'mrtr' | 'edge' | 'cluster' | 'seal' | 'memory' | 'observe';
/** `--only a,b` runs some phases (while working on one figure); the default is all of them. */
export const phase = (name: Phase): boolean => !only || only.includes(name);
/** True for a full run of every phase and system (what the run-time target judges). */
export const whole = !quick && !only && !systems;
/** `--systems a,b` measures some systems only (same purpose). */
export const wanted = (system: string): boolean => !systems || systems.includes(system);
/** A system measured only when `--systems` names it (context that costs a full run more than it tells). */
export const named = (system: string): boolean => systems?.includes(system) ?? false;

/**
 * Timed calls per figure by concurrency. Enough for stable medians (a p50 of 300 samples at
 * concurrency 1; about a second or more of steady load at 16 and 64), few enough for a full run ≤ 12
 * minutes (16 and 64 are context only since the CPU and throughput targets have figures of their own:
 * with 1,500 and 1,200 there, and the other sizes before stop 57, a full run took 11 min 21 s to 13 min
 * 12 s on an Intel Xeon and 17 min 31 s to 18 min 20 s on a slower AMD EPYC).
 */
export const CALLS: Record<1 | 16 | 64, number> = quick ? { 1: 60, 16: 200, 64: 400 } : { 1: 300, 16: 1_000, 64: 800 };
/**
 * The CPU pair (gateway against the floor, bench/pass-through.ts): calls per run and runs. Each run
 * lasts seconds, not one, and the pairs are many (an odd number: the median is one of them): the ratio
 * of two CPU figures taken on a shared machine moves by ±30% over runs of a second.
 */
export const CPU_PAIR = quick ? { calls: 400, runs: 3 } : { calls: 4_000, runs: 7 };
/**
 * The throughput target's own figure: the SDK-driven gateway rows, the peers and the floor behind the
 * same clients alone at concurrency 64, 16 B, each driven by clients on threads of their own, in turns, judged on the median of each run's ratio to the best peer in the same turn (as
 * the CPU pair): three runs of every system at 64 read 1.23x, 1.63x and 1.39x in three full runs of one
 * session, the machine's state between them moving the peers and the gateway apart.
 */
export const THROUGHPUT_PAIR = quick ? { calls: 400, runs: 3, firstWarmup: 400 } : { calls: 1_500, runs: 7, firstWarmup: 2_000 };
/** MRTR rounds per figure (a default-config round waits for its coalescing window, tens of ms). */
export const ROUNDS: Record<1 | 16, number> = quick ? { 1: 30, 16: 100 } : { 1: 100, 16: 800 };
/**
 * Rounds each backend process serves before a round figure's first timed run at concurrency 16 (a
 * rounds/s figure: sustained load, at each system's steady state). V8 optimises each process's code on
 * its own, and a backend process settles only after about 2,000 rounds of its own (measured: one
 * process's CPU a round at concurrency 1 fell from 1.19 ms over its first 250 rounds to 0.56–0.60 over
 * its 2,500th to 3,000th; 16 processes sharing the rounds fell only after 1,400 to 2,100 each). A system that
 * spreads its calls over 16 processes (exact correlation over stdio) gets 16 times the rounds of one
 * that serves every call from one process: every system is measured at its own steady state. And kept
 * there: a process idle for 30 s loses part of it (16 processes at 1.01 ms a round fell back to 1.47,
 * still 1.34 after 3,200 more rounds), so each system's runs at 16 follow its warm-up with no pause.
 * 1,500 since stop 57 (2,500 before): the gateway's 16 processes took 132 s of a full run to warm on a
 * slower machine. Measured there (`/tmp` harness, 16 fresh processes straight from SDK v1 clients at
 * 16, backend CPU a round over each 125 rounds a process): 3.6 ms over the first, 2.4 to 3.3 up to
 * 1,250, 1.9 to 2.3 from 1,375 to 1,875, 1.65 at 2,000: past the knee at 1,500, most of the way. Not V8
 * optimising the server's code: processes that first served 2,500 rounds in-process (the same server
 * and transport, over a Unix socket) followed the same curve.
 */
export const ROUNDS_PER_PROCESS_WARMUP = quick ? 0 : 1_500;
/**
 * The rounds/s target's own figure (as the CPU and throughput targets have theirs): the gateway and
 * the peers that elicit alone at concurrency 16, in alternating turns of `rounds`, judged on the median
 * of each turn's ratio to the best peer of the same turn. The sustained figure measures one system's
 * runs after another's, and the machine drifted between them: in one full run the gateway read 0.80×
 * there (every process of it, the client's included, about 20% slower a round than in the other runs
 * of this stop), where runs of the same build alternating with the peer read 0.97× to 1.18×. Before its
 * first turn each system serves `firstWarmup` rounds (its processes warmed in the sustained figure; the
 * peer's one process idled through the gateway's rows since); a turn idles the other system's
 * processes for about a second, not the half minute that costs them (ROUNDS_PER_PROCESS_WARMUP).
 */
export const ROUNDS_PAIR = quick ? { rounds: 100, runs: 3, warmup: 20, firstWarmup: 100 } : { rounds: 800, runs: 7, warmup: 100, firstWarmup: 1_500 };
/**
 * Rounds each path of the cluster figure serves before its first timed run (the retry on its owner,
 * forwarded, through the relay), at concurrency 8. In a cluster every instance takes its share of the
 * traffic, so the one a retry reaches is as warm as its owner; the figure's usual warm-up left it in its
 * first few hundred forwards, running unoptimised code (under `perf`, its CPU mostly V8's inline caches
 * and baseline code). Measured (`/tmp` harness, c1, interleaved): after 400 rounds a path the
 * forwarding instance spent 1.45 ms of CPU a forward and the relay 0.62; after 3,000, 0.76 to 0.98 and
 * 0.33 to 0.41.
 */
export const CLUSTER_WARMUP_ROUNDS = quick ? 0 : 3_000;
/** Untimed calls before each figure (sessions, JIT, connection pools). */
export const WARMUP = quick ? 20 : 100;
/** Parked calls over an HTTP backend, measured at each count. */
export const PARKED_HTTP = quick ? [200, 1_000] : [1_000, 10_000];
/** Parked calls over a stdio backend: each holds a backend process (~70 MB), so far fewer. */
export const PARKED_STDIO = quick ? 8 : 32;
export const PAYLOADS = { '16 B': 'x'.repeat(16), '64 KiB': 'x'.repeat(64 * 1024) } as const;
