/**
 * The systems the pass-through and round phases share, started once: the direct client's backend, the
 * gateway (default config and tuned), the two peers and the HTTP floor. Each phase connects its own
 * clients and hands them to `track`, so they are closed with the fleet.
 */
import { directClient } from './clients.js';
import {
  BACKEND_STDIO,
  BEST_CONFIG,
  DEFAULT_CONFIG,
  FLOOR,
  startGateway,
  startPeer,
  startUrlProcess,
  type ProbedGateway,
  type SystemProcess,
} from './procs.js';

export interface Fleet {
  readonly direct: Awaited<ReturnType<typeof directClient>>;
  readonly gw: ProbedGateway;
  readonly best: ProbedGateway;
  readonly proxy: SystemProcess;
  readonly superGw: SystemProcess;
  readonly floor: SystemProcess;
  /** Closes `client` with the fleet. */
  track<T extends { close(): Promise<void> }>(client: T): T;
  close(): Promise<void>;
}

export async function startFleet(): Promise<Fleet> {
  const procs: SystemProcess[] = [];
  const closers: (() => Promise<void>)[] = [];
  const keep = <T extends SystemProcess>(p: T): T => (procs.push(p), p);
  const track = <T extends { close(): Promise<void> }>(client: T): T => (closers.push(() => client.close()), client);
  try {
    const direct = await directClient(BACKEND_STDIO);
    track(direct.client);
    return {
      direct,
      gw: keep(await startGateway(DEFAULT_CONFIG)),
      best: keep(await startGateway(BEST_CONFIG, { LOG_LEVEL: 'warn' })),
      proxy: keep(await startPeer('mcp-proxy')),
      superGw: keep(await startPeer('supergateway')),
      floor: keep(await startUrlProcess([...FLOOR, ...BACKEND_STDIO])),
      track,
      close: () => closeAll(closers, procs),
    };
  } catch (e) {
    await closeAll(closers, procs);
    throw e;
  }
}

/** Closes clients, then stops processes; failures of either are ignored (the bench is ending that part). */
export async function closeAll(closers: readonly (() => Promise<void>)[], procs: readonly SystemProcess[]): Promise<void> {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
}
