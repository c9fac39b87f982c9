/**
 * What a parked call costs the gateway (a call waiting for its client's answer), over both kinds of
 * backend: heap used after a full GC and RSS, against the same gateway before any call was parked,
 * divided by the number of calls *actually* parked (answers that were `input_required`; every other
 * answer or failure is counted as an error and shown).
 *   HTTP   one backend process; parked calls share its sessions (`PARKED_HTTP` counts).
 *   stdio  one input-capable call per backend session, so each parked call holds a backend process
 *          (`maxSessions` raised to let `PARKED_STDIO` of them park); their summed RSS is shown too.
 * `BENCH_HEAP_SNAPSHOT=prefix` writes a heap snapshot at each HTTP count (DevTools' Memory tab).
 */
import { ELICIT, rpc } from './clients.js';
import { descendants, rssBytes } from './measure.js';
import { PARKED_HTTP, PARKED_STDIO } from './options.js';
import { backendEntry, BACKEND_HTTP, startGateway, startUrlProcess, type ProbedGateway } from './procs.js';
import type { MemoryPoint } from './report.js';

type Kind = MemoryPoint['backend'];
export interface Baseline {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  /** The gateway's backend processes (stdio), summed. */
  readonly backendRssBytes?: number;
}
export interface ParkedFigures {
  readonly baselines: Partial<Record<Kind, Baseline>>;
  readonly points: MemoryPoint[];
}

/** Sends `count` calls of `ask` with `concurrency` in flight; counts those answered `input_required`. */
async function park(url: string, count: number, concurrency: number): Promise<{ parked: number; errors: number }> {
  let parked = 0;
  let errors = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      try {
        const r = await rpc(url, 'tools/call', { name: 'ask', arguments: {} }, ELICIT);
        if (r['resultType'] === 'input_required') parked++;
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, () => worker()));
  return { parked, errors };
}

const sum = (xs: readonly (number | undefined)[]): number => xs.reduce<number>((n, x) => n + (x ?? 0), 0);

/** Warms the gateway up, takes its baseline, then parks calls up to each of `counts`, measuring at each. */
async function measureParked(
  kind: Kind,
  gw: ProbedGateway,
  counts: readonly number[],
  concurrency: number,
): Promise<{ baseline: Baseline; points: MemoryPoint[] }> {
  const echo = { name: 'echo', arguments: { text: 'warm' } };
  for (let i = 0; i < 25; i++) await Promise.all(Array.from({ length: 8 }, () => rpc(gw.url, 'tools/call', echo)));
  const read = async (): Promise<Baseline> => {
    const m = await gw.memory();
    const backend = kind === 'stdio' ? { backendRssBytes: sum(descendants(gw.pid).map(rssBytes)) } : {};
    return { rssBytes: rssBytes(gw.pid) ?? m.rss, heapUsedBytes: m.heapUsed, ...backend };
  };
  // Two reads: the first GC after the warm-up can still hand pages back, which would make RSS fall later.
  await read();
  const baseline = await read();
  const points: MemoryPoint[] = [];
  let asked = 0;
  let parked = 0;
  let errors = 0;
  for (const target of counts) {
    const r = await park(gw.url, target - asked, concurrency);
    asked = target;
    parked += r.parked;
    errors += r.errors;
    const now = await read();
    const per = (x: number): number => (parked > 0 ? x / parked : NaN);
    points.push({
      backend: kind,
      asked,
      parked,
      errors,
      ...now,
      rssPerCallBytes: per(now.rssBytes - baseline.rssBytes),
      heapPerCallBytes: per(now.heapUsedBytes - baseline.heapUsedBytes),
      ...(now.backendRssBytes !== undefined ? { backendRssPerCallBytes: per(now.backendRssBytes - (baseline.backendRssBytes ?? 0)) } : {}),
    });
    console.error(
      `  parked calls, ${kind} backend: ${parked} of ${asked} parked, ${errors} errors; heap ${(points.at(-1)!.heapPerCallBytes / 1024).toFixed(1)} KiB per call`,
    );
    if (kind === 'HTTP' && process.env['BENCH_HEAP_SNAPSHOT']) await gw.heapSnapshot(`${process.env['BENCH_HEAP_SNAPSHOT']}-${parked}.heapsnapshot`);
  }
  return { baseline, points };
}

async function parkedHttp(): Promise<{ baseline: Baseline; points: MemoryPoint[] }> {
  const backend = await startUrlProcess(BACKEND_HTTP);
  try {
    const max = PARKED_HTTP[PARKED_HTTP.length - 1]!;
    const gw = await startGateway(
      { mcpServers: { bench: { url: backend.url } }, gateway: { maxParkedTotal: max + 10, maxParkedPerPrincipal: max + 10, requestStateTtlSeconds: 3_600 } },
      { LOG_LEVEL: 'warn' },
    );
    try {
      return await measureParked('HTTP', gw, PARKED_HTTP, 64);
    } finally {
      await gw.stop();
    }
  } finally {
    await backend.stop();
  }
}

async function parkedStdio(): Promise<{ baseline: Baseline; points: MemoryPoint[] }> {
  // One session (process) per parked call, plus the spare and the warm-up's sessions.
  const sessions = PARKED_STDIO + 4;
  const gw = await startGateway(
    {
      mcpServers: { bench: backendEntry({ maxSessions: sessions }) },
      gateway: {
        maxSessionsPerBackend: sessions,
        maxParkedTotal: sessions,
        maxParkedPerPrincipal: sessions,
        requestStateTtlSeconds: 3_600,
        sessionWaitMs: 120_000,
        // Parked calls are drained on SIGTERM for up to drainTimeoutMs (default 30 s), but stopChild
        // kills the gateway after 10 s: its backend processes were left behind. Cancel them at once.
        drainTimeoutMs: 0,
      },
    },
    { LOG_LEVEL: 'warn' },
  );
  try {
    return await measureParked('stdio', gw, [PARKED_STDIO], 4);
  } finally {
    await gw.stop();
  }
}

export async function parkedMemory(): Promise<ParkedFigures> {
  const http = await parkedHttp();
  const stdio = await parkedStdio();
  return { baselines: { HTTP: http.baseline, stdio: stdio.baseline }, points: [...http.points, ...stdio.points] };
}
