/**
 * A system as a figure sees it: a call, the client that makes it, and the processes whose CPU is read.
 * `measureSystems` measures one figure for several systems alternately (or each one's runs back to back:
 * `sustained`), `REPEATS` times, and records it.
 * Every system gets the same warm-up: as many untimed calls as the figure times before its first run
 * (a gateway's code is optimised only after thousands of calls; 100 left it measured half-warm), then
 * the usual few before each later run. A round figure also brings every backend process to its steady
 * state first (`perProcessWarmup` calls each): a system that spreads calls over 16 processes gets 16
 * times the warm-up of one that serves them all from one.
 */
import { measureFigure, runLoad, type CpuWatch, type Figure } from './measure.js';
import { REPEATS, wanted } from './options.js';
import { record } from './report.js';

export interface Driven {
  /** What drives it, as shown in the table (`SDK v1`, `SDK v2`, `fetch`, `SDK v1 (stdio)`). */
  readonly client: string;
  /** One call; a number it resolves to is its own latency in ms (the part that is timed). */
  readonly call: () => Promise<void | number>;
  readonly watch?: CpuWatch;
  /**
   * Backend processes it spreads calls in flight over at concurrency 16 (default 1): each reaches its
   * steady state on its own (`perProcessWarmup`).
   */
  readonly processes?: number;
  /** Another system of the figure on the same processes (the same gateway, another client) whose calls warm them. */
  readonly warmedBy?: string;
}

export async function measureSystems(
  systems: Record<string, Driven>,
  scenario: string,
  opts: { concurrency: number; total: number; warmup: number; firstWarmup?: number; perProcessWarmup?: number; sustained?: boolean; repeats?: number },
): Promise<void> {
  const runs: Record<string, Figure[]> = {};
  const selected = Object.entries(systems).filter(([name]) => wanted(name));
  const warmed = new Set<string>();
  const reps = Array.from({ length: opts.repeats ?? REPEATS }, (_, rep) => rep);
  // Alternately, so that a change in the machine's state touches every system alike; or, `sustained`,
  // each system's runs back to back after its warm-up, none of its processes left idle in between (a
  // backend process idle for half a minute loses part of its optimised code: options.ts).
  const order = opts.sustained ? selected.flatMap((e) => reps.map((rep) => [e, rep] as const)) : reps.flatMap((rep) => selected.map((e) => [e, rep] as const));
  for (const [[name, s], rep] of order) {
    // Before a system's first run of the figure, `firstWarmup` calls bring it to its steady state
    // (optimised code, warm pools); its later runs warm up with `warmup`.
    if (rep === 0) await warmProcesses(systems, name, s, warmed, opts);
    const warmup = rep === 0 ? (opts.firstWarmup ?? opts.warmup) : opts.warmup;
    const figure = { concurrency: opts.concurrency, total: opts.total, warmup, ...(s.watch ? { watch: s.watch } : {}) };
    (runs[name] ??= []).push(await measureFigure(s.call, figure));
  }
  for (const [name, s] of selected) record(name, s.client, scenario, opts.concurrency, runs[name]!);
}

/**
 * Before a system's first run: `perProcessWarmup` calls for each of its backend processes, made by the
 * system that warms them (the fastest client of the same gateway), once for processes several systems share.
 */
async function warmProcesses(
  systems: Record<string, Driven>,
  name: string,
  s: Driven,
  warmed: Set<string>,
  opts: { concurrency: number; perProcessWarmup?: number },
): Promise<void> {
  const by = s.warmedBy ?? name;
  if (!opts.perProcessWarmup || warmed.has(by)) return;
  warmed.add(by);
  const warmer = systems[by] ?? s;
  await runLoad(warmer.call, { concurrency: opts.concurrency, total: opts.perProcessWarmup * (s.processes ?? 1), warmup: 0 });
}
