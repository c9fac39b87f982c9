/**
 * A system as a figure sees it: a call, the client that makes it, and the processes whose CPU is read.
 * `measureSystems` measures one figure for several systems alternately, `REPEATS` times, and records it.
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
  opts: { concurrency: number; total: number; warmup: number },
): Promise<void> {
  const runs: Record<string, Figure[]> = {};
  const selected = Object.entries(systems).filter(([name]) => wanted(name));
  for (let rep = 0; rep < REPEATS; rep++) {
    for (const [name, s] of selected) {
      (runs[name] ??= []).push(await measureFigure(s.call, { ...opts, ...(s.watch ? { watch: s.watch } : {}) }));
    }
  }
  for (const [name, s] of selected) record(name, s.client, scenario, opts.concurrency, runs[name]!);
}
