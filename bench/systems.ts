/**
 * A system as a figure sees it: a call, the client that makes it, and the processes whose CPU is read.
 * `measureSystems` measures one figure for several systems alternately, `REPEATS` times, and records it;
 * `measureSustained` measures one figure system by system, each one's runs back to back.
 * Every system gets the same warm-up: as many untimed calls as the figure times before its first run
 * (a gateway's code is optimised only after thousands of calls; 100 left it measured half-warm), then
 * the usual few before each later run. The round figures also bring every backend process to its
 * steady state first (`perProcessWarmup` calls each): a system that spreads calls over 16 processes
 * gets 16 times the warm-up of one that serves them all from one.
 */
import { mainThreadLoad, measureLoad, type CpuWatch, type Figure, type Load } from './measure.js';
import { REPEATS, wanted } from './options.js';
import { record } from './report.js';

export type Driven = DrivenBy &
  (
    | {
        /** One call, made on the bench's main thread; a number it resolves to is its own latency in ms (the part that is timed). */
        readonly call: () => Promise<void | number>;
      }
    | {
        /** The calls made by clients of its own (client-threads.ts). */
        readonly load: Load;
      }
  );

interface DrivenBy {
  /** What drives it, as shown in the table (`SDK v1`, `SDK v2`, `fetch`, `SDK v1 (stdio)`). */
  readonly client: string;
  readonly watch?: CpuWatch;
  /**
   * Backend processes it spreads calls in flight over at concurrency 16 (default 1): each reaches its
   * steady state on its own (`perProcessWarmup`).
   */
  readonly processes?: number;
  /** Another system of the figure on the same processes (the same gateway, another client) whose calls warm them. */
  readonly warmedBy?: string;
  /** The concurrencies it is measured at (default: every one a figure asks for): context rows read some only. */
  readonly at?: readonly number[];
}

/** The systems measured at `concurrency` (and asked for with `--systems`). */
const measuredAt = (systems: Record<string, Driven>, concurrency: number): [string, Driven][] =>
  Object.entries(systems).filter(([name, s]) => wanted(name) && (s.at?.includes(concurrency) ?? true));

/** One figure: concurrency, timed calls per run, warm-up calls before a later run and before the first. */
export interface FigureSpec {
  readonly concurrency: number;
  readonly total: number;
  readonly warmup: number;
  readonly firstWarmup?: number;
  readonly repeats?: number;
}

/**
 * One figure for several systems, alternately (a change in the machine's state touches every system
 * alike), `REPEATS` times; recorded under `scenario`.
 */
export async function measureSystems(systems: Record<string, Driven>, scenario: string, opts: FigureSpec): Promise<void> {
  const runs: Record<string, Figure[]> = {};
  const spentMs: Record<string, number> = {};
  const selected = measuredAt(systems, opts.concurrency);
  for (let rep = 0; rep < (opts.repeats ?? REPEATS); rep++) {
    // Before a system's first run of the figure, `firstWarmup` calls bring it to its steady state
    // (optimised code, warm pools); its later runs follow another system's, and warm up with `warmup`.
    for (const [name, s] of selected) {
      const t0 = performance.now();
      (runs[name] ??= []).push(await runOnce(s, opts, rep));
      spentMs[name] = (spentMs[name] ?? 0) + performance.now() - t0;
    }
  }
  for (const [name, s] of selected) record(name, s.client, scenario, opts.concurrency, runs[name]!, { spentMs: spentMs[name]! });
}

/**
 * One figure of a sustained load, system by system: each system's backend processes first serve
 * `perProcessWarmup` calls each, then its runs follow back to back, none of its processes left idle in
 * between (a backend process idle for half a minute loses part of its optimised code: options.ts).
 * Recorded under `scenario`.
 */
export async function measureSustained(systems: Record<string, Driven>, scenario: string, figure: FigureSpec, perProcessWarmup: number): Promise<void> {
  const warmed = new Set<string>();
  for (const [name, s] of measuredAt(systems, figure.concurrency)) {
    const t0 = performance.now();
    await warmProcesses(systems, name, warmed, { concurrency: figure.concurrency, perProcessWarmup });
    const t1 = performance.now();
    const runs: Figure[] = [];
    for (let rep = 0; rep < (figure.repeats ?? REPEATS); rep++) runs.push(await runOnce(s, figure, rep));
    record(name, s.client, scenario, figure.concurrency, runs, { spentMs: performance.now() - t0, processWarmupMs: t1 - t0 });
  }
}

/** A system's `rep`th run of a figure, after its warm-up (`firstWarmup` before the first). */
function runOnce(s: Driven, figure: FigureSpec, rep: number): Promise<Figure> {
  const warmup = rep === 0 ? (figure.firstWarmup ?? figure.warmup) : figure.warmup;
  return measureLoad(loadOf(s), { concurrency: figure.concurrency, total: figure.total, warmup, ...(s.watch ? { watch: s.watch } : {}) });
}

/** What makes `s`'s calls. */
const loadOf = (s: Driven): Load => ('load' in s ? s.load : mainThreadLoad(s.call));

/**
 * `perProcessWarmup` calls for each backend process of the system `name`, made by the system that
 * warms them (`warmedBy`: the quickest client of the same gateway), once for processes several
 * systems share.
 */
async function warmProcesses(
  systems: Record<string, Driven>,
  name: string,
  warmed: Set<string>,
  opts: { concurrency: number; perProcessWarmup: number },
): Promise<void> {
  const by = systems[name]?.warmedBy ?? name;
  const warmer = systems[by];
  if (!warmer) throw new Error(`${name} is warmed by ${by}, which is not a system of this figure`);
  if (opts.perProcessWarmup <= 0 || warmed.has(by)) return;
  warmed.add(by);
  await loadOf(warmer).warm({ concurrency: opts.concurrency, total: opts.perProcessWarmup * (warmer.processes ?? 1) });
}
