/**
 * A system as a figure sees it: a call, the client that makes it, and the processes whose CPU is read.
 * `measureSystems` measures one figure for several systems alternately, `REPEATS` times, and records it.
 * Every system gets the same warm-up: as many untimed calls as the figure times before its first run
 * (a gateway's code is optimised only after thousands of calls; 100 left it measured half-warm), then
 * the usual few before each later run.
 */
import { measureFigure, type CpuWatch, type Figure } from './measure.js';
import { REPEATS, wanted } from './options.js';
import { record } from './report.js';

export interface Driven {
  /** What drives it, as shown in the table (`SDK v1`, `SDK v2`, `fetch`, `SDK v1 (stdio)`). */
  readonly client: string;
  /** One call; a number it resolves to is its own latency in ms (the part that is timed). */
  readonly call: () => Promise<void | number>;
  readonly watch?: CpuWatch;
}

export async function measureSystems(
  systems: Record<string, Driven>,
  scenario: string,
  opts: { concurrency: number; total: number; warmup: number; firstWarmup?: number; repeats?: number },
): Promise<void> {
  const runs: Record<string, Figure[]> = {};
  const selected = Object.entries(systems).filter(([name]) => wanted(name));
  for (let rep = 0; rep < (opts.repeats ?? REPEATS); rep++) {
    // Before a system's first run of the figure, `firstWarmup` calls bring it to its steady state
    // (optimised code, warm pools); its later runs follow another system's, and warm up with `warmup`.
    const warmup = rep === 0 ? (opts.firstWarmup ?? opts.warmup) : opts.warmup;
    const figure = { concurrency: opts.concurrency, total: opts.total, warmup };
    for (const [name, s] of selected) {
      (runs[name] ??= []).push(await measureFigure(s.call, { ...figure, ...(s.watch ? { watch: s.watch } : {}) }));
    }
  }
  for (const [name, s] of selected) record(name, s.client, scenario, opts.concurrency, runs[name]!);
}
