/**
 * The bench's figures as they are measured (one row per system, scenario and concurrency; progress on
 * stderr as each finishes) and as printed at the end: the latency table with CPU per call, the
 * parked-call memory table, the targets with their measured value and met / missed, and context.
 */
import type { Figure } from './measure.js';
import { spread, type Spread } from './measure.js';

export interface Row {
  readonly system: string;
  /** What drives it: `SDK v1`, `SDK v2`, `fetch` (bare), `SDK v1 (stdio)`. */
  readonly client: string;
  readonly scenario: string;
  readonly concurrency: number;
  readonly p50: Spread;
  readonly p99: Spread;
  readonly rps: Spread;
  /** CPU ms per call of the system's own process(es), of its backend processes, and of the client (the bench's main thread). */
  readonly cpu?: Spread;
  readonly backendCpu?: Spread;
  readonly clientCpu?: Spread;
  /** The system's CPU ms per call of each run, in the order run (run i of every system of a figure was measured in turn). */
  readonly cpuRuns: readonly number[];
  /** Its calls per second of each run, in the same order. */
  readonly rpsRuns: readonly number[];
  /** Calls that succeeded, and those that failed, over every run. */
  readonly calls: number;
  readonly errors: number;
}

export const rows: Row[] = [];

export const fmt = (s: Spread | undefined, digits = 2): string =>
  !s || Number.isNaN(s.median)
    ? '–'
    : s.min === s.max
      ? s.median.toFixed(digits)
      : `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;

const defined = (xs: (number | undefined)[]): number[] => xs.filter((x): x is number => x !== undefined);

/** Records one figure's repeated runs and prints it (stderr: the table stays on stdout). */
/** `12.3 s (warm-up of its processes 8.1 s)`. */
const spentOf = (s: Spent): string =>
  `${(s.spentMs / 1000).toFixed(1)} s${s.processWarmupMs !== undefined ? ` (warm-up of its processes ${(s.processWarmupMs / 1000).toFixed(1)} s)` : ''}`;

/** How long a figure took a system (its warm-ups and runs), shown in the progress line: where a run's time goes. */
export interface Spent {
  readonly spentMs: number;
  /** Of that, bringing its backend processes to their steady state first (bench/systems.ts `measureSustained`). */
  readonly processWarmupMs?: number;
}

export function record(system: string, client: string, scenario: string, concurrency: number, runs: readonly Figure[], spent?: Spent): void {
  const cpu = defined(runs.map((r) => r.cpuMsPerCall));
  const backendCpu = defined(runs.map((r) => r.backendCpuMsPerCall));
  const clientCpu = defined(runs.map((r) => r.clientCpuMsPerCall));
  const row: Row = {
    system,
    client,
    scenario,
    concurrency,
    p50: spread(runs.map((r) => r.p50Ms)),
    p99: spread(runs.map((r) => r.p99Ms)),
    rps: spread(runs.map((r) => r.callsPerSec)),
    ...(cpu.length ? { cpu: spread(cpu) } : {}),
    ...(backendCpu.length ? { backendCpu: spread(backendCpu) } : {}),
    ...(clientCpu.length ? { clientCpu: spread(clientCpu) } : {}),
    cpuRuns: runs.map((r) => r.cpuMsPerCall ?? NaN),
    rpsRuns: runs.map((r) => r.callsPerSec),
    calls: runs.reduce((n, r) => n + r.calls, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
  };
  rows.push(row);
  console.error(
    `  ${system} (${client}) · ${scenario} · conc. ${concurrency}: p50 ${fmt(row.p50)} ms, ${fmt(row.rps, 0)}/s, CPU ${fmt(row.cpu, 3)} ms/call (backend ${fmt(row.backendCpu, 3)}, client ${fmt(row.clientCpu, 3)}), ${row.errors} errors${spent ? `; ${spentOf(spent)}` : ''}`,
  );
}

export const find = (system: string, scenario: string, c: number): Row | undefined =>
  rows.find((r) => r.system === system && r.scenario === scenario && r.concurrency === c);
export const p50 = (system: string, scenario: string, c: number): number => find(system, scenario, c)?.p50.median ?? NaN;
export const rps = (system: string, scenario: string, c: number): number => find(system, scenario, c)?.rps.median ?? NaN;
export const cpu = (system: string, scenario: string, c: number): number => find(system, scenario, c)?.cpu?.median ?? NaN;
/** The spread of `x[i] / y[i]` over the runs where both are numbers (NaN throughout when none is). */
function ratioSpread(x: readonly number[], y: readonly number[]): Spread {
  const ratios = x.map((v, i) => v / (y[i] ?? NaN)).filter((r) => Number.isFinite(r));
  return ratios.length ? spread(ratios) : { median: NaN, min: NaN, max: NaN };
}
/**
 * `a`'s CPU per call over `b`'s, run by run (run i of both was measured in the same turn of the
 * figure, seconds apart): the median of those ratios, and the lowest and highest. A machine that
 * drifts faster or slower over a figure moves both sides of each pair alike.
 */
export const pairedCpuSpread = (a: string, b: string, scenario: string, c: number): Spread =>
  ratioSpread(find(a, scenario, c)?.cpuRuns ?? [], find(b, scenario, c)?.cpuRuns ?? []);
export const pairedCpuRatio = (a: string, b: string, scenario: string, c: number): number => pairedCpuSpread(a, b, scenario, c).median;
/**
 * `a`'s calls per second over the best of `peers`' in the same turn, run by run (as `pairedCpuSpread`).
 * A peer that answered nothing in a turn is no peer in it.
 */
export const pairedRpsSpread = (a: string, peers: readonly string[], scenario: string, c: number): Spread => {
  const theirs = peers.map((p) => find(p, scenario, c)?.rpsRuns ?? []);
  const mine = find(a, scenario, c)?.rpsRuns ?? [];
  const best = mine.map((_, i) => Math.max(0, ...theirs.map((t) => t[i] ?? 0)) || NaN);
  return ratioSpread(mine, best);
};
export const pairedRpsRatio = (a: string, peers: readonly string[], scenario: string, c: number): number => pairedRpsSpread(a, peers, scenario, c).median;
export const backendCpu = (system: string, scenario: string, c: number): number => find(system, scenario, c)?.backendCpu?.median ?? NaN;
export const clientCpu = (system: string, scenario: string, c: number): number => find(system, scenario, c)?.clientCpu?.median ?? NaN;

export function latencyTable(): string[] {
  const lines = [
    '| system | client | scenario | conc. | p50 ms | p99 ms | calls/s | CPU ms/call | backend CPU ms/call | client CPU ms/call | errors |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.system} | ${r.client} | ${r.scenario} | ${r.concurrency} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.rps, 0)} | ${fmt(r.cpu, 3)} | ${fmt(r.backendCpu, 3)} | ${fmt(r.clientCpu, 3)} | ${r.errors} |`,
    );
  }
  return lines;
}

/** Parked calls held by one gateway at one count, with what the gateway holds for them after a full GC. */
export interface MemoryPoint {
  readonly backend: 'HTTP' | 'stdio';
  /** Calls sent, answered `input_required` (parked), and failed or answered otherwise (errors). */
  readonly asked: number;
  readonly parked: number;
  readonly errors: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  /** Per parked call, against the gateway's baseline before any was parked. */
  readonly rssPerCallBytes: number;
  readonly heapPerCallBytes: number;
  /** RSS of the gateway's backend processes (stdio: one per parked call), summed, and per parked call. */
  readonly backendRssBytes?: number;
  readonly backendRssPerCallBytes?: number;
}

const mb = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MB`;
const kib = (b: number): string => `${(b / 1024).toFixed(1)} KiB`;

export function memoryTable(
  baselines: Record<string, { rssBytes: number; heapUsedBytes: number; backendRssBytes?: number }>,
  points: readonly MemoryPoint[],
): string[] {
  const lines = [
    '| backend | asked | parked | errors | gateway RSS | heap used | RSS / parked call | heap / parked call | backend processes RSS |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [backend, b] of Object.entries(baselines)) {
    lines.push(`| ${backend} | 0 | 0 | 0 | ${mb(b.rssBytes)} | ${mb(b.heapUsedBytes)} | | | ${b.backendRssBytes === undefined ? '' : mb(b.backendRssBytes)} |`);
  }
  for (const m of points) {
    const perCall = m.backendRssPerCallBytes === undefined ? '' : ` (${mb(m.backendRssPerCallBytes)} per parked call)`;
    const procs = m.backendRssBytes === undefined ? '' : `${mb(m.backendRssBytes)}${perCall}`;
    lines.push(
      `| ${m.backend} | ${m.asked} | ${m.parked} | ${m.errors} | ${mb(m.rssBytes)} | ${mb(m.heapUsedBytes)} | ${kib(m.rssPerCallBytes)} | ${kib(m.heapPerCallBytes)} | ${procs} |`,
    );
  }
  return lines;
}

export interface Target {
  readonly target: string;
  /** The value compared with the limit, and how it is shown (with what it was computed from). */
  readonly value: number;
  readonly shown: string;
  readonly limit: number;
  readonly atLeast?: boolean;
  /**
   * The best value any gateway could have on this machine, from what the same run measured of the
   * parts that are not the gateway (its clients' and backends' CPU, a bare HTTP hop): a missed target
   * whose reach misses the limit too is out of reach here, whatever the gateway does.
   */
  readonly reach?: number;
}

const within = (t: Target, v: number): boolean => (t.atLeast ? v >= t.limit : v <= t.limit);
export const met = (t: Target): boolean => within(t, t.value);
const verdict = (t: Target): string =>
  Number.isNaN(t.value)
    ? 'not measured'
    : met(t)
      ? 'met'
      : t.reach !== undefined && Number.isFinite(t.reach) && !within(t, t.reach)
        ? 'missed (out of reach here)'
        : 'missed';

export function targetTable(targets: readonly Target[]): string[] {
  return ['| target | measured | met / missed |', '| --- | ---: | :---: |', ...targets.map((t) => `| ${t.target} | ${t.shown} | ${verdict(t)} |`)];
}
