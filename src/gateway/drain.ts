/**
 * Graceful shutdown: new work is refused with 503 `gateway_draining` (or, in a cluster, forwarded to an
 * instance that takes new work) while calls in flight finish and continuations are still served here:
 * the retry of a parked call (a request with its requestState) and `tasks/*` requests. It lasts until
 * every call, request being handled and legacy client's request has ended, and (without a cluster
 * store) every client polling a task has seen it end, or the deadline passes; then `close()`.
 */
import type { RedisCluster } from '../cluster/redis/cluster.js';
import type { CallEngine } from '../core/calls/call-engine.js';
import type { Logger } from '../log.js';
import { sleep, untilNone } from '../util/abort.js';
import type { Lifecycle } from './lifecycle.js';

/** How often a drain looks again for requests still being handled (calls are waited for directly). */
const DRAIN_POLL_MS = 20;

export interface DrainDeps {
  readonly life: Lifecycle;
  readonly engine: CallEngine;
  /** Legacy clients' requests not answered yet. */
  readonly legacyInFlight: () => number;
  /** How many tasks a client is polling that it has not seen end yet (TaskRegistry `awaitedReads`). */
  readonly tasks: { awaitedReads(): number };
  readonly cluster: RedisCluster | undefined;
  readonly logger: Logger;
  readonly close: () => Promise<void>;
}

export function createDrain(deps: DrainDeps): (deadlineMs: number) => Promise<void> {
  const { life, engine, logger } = deps;
  return async (deadlineMs) => {
    if (life.startDraining()) {
      logger.info(
        { live: engine.live, deadlineMs },
        deps.cluster
          ? 'draining: new requests go to other instances of the cluster (or are refused); calls in flight may finish'
          : 'draining: new requests are refused; calls in flight may finish',
      );
      // In a cluster, the others stop sending this instance new work, and new work that reaches it is
      // forwarded to them; what it holds (parked calls, tasks) stays and finishes or fails here.
      await deps.cluster?.instances.markDraining().catch((e: unknown) => logger.warn({ err: (e as Error).message }, 'could not mark this instance draining'));
    }
    const deadline = AbortSignal.timeout(Math.max(0, deadlineMs));
    try {
      // Without a cluster store a task's end goes with this instance: a client polling it is let see it.
      // With one, it is written there at close and any instance serves it.
      const taskReads = deps.cluster ? (): number => 0 : (): number => deps.tasks.awaitedReads();
      while (engine.live > 0 || life.inFlight > 0 || deps.legacyInFlight() > 0 || taskReads() > 0) {
        if (engine.live > 0) await engine.whenIdle(deadline);
        else await sleep(DRAIN_POLL_MS, deadline);
      }
    } catch {
      logger.warn(
        { live: engine.live, inFlight: life.inFlight, legacyInFlight: deps.legacyInFlight(), awaitedTaskReads: deps.cluster ? 0 : deps.tasks.awaitedReads() },
        'drain deadline passed: cancelling the calls left',
      );
    }
    await deps.close();
    logger.info({}, 'drained: closed');
  };
}

export interface CloseDeps {
  readonly life: Lifecycle;
  readonly tasks: { close(): Promise<void> };
  readonly engine: CallEngine;
  /** Legacy clients' requests not answered yet. */
  readonly legacyInFlight: () => number;
  /** Closes every part, in the reverse order they were built. */
  readonly closers: () => Promise<void>;
}

/**
 * The gateway's `close()`: once, whoever calls it (a drain's end, a second signal); every part is
 * closed even when a step before fails. Every call ends first, so a legacy client's waiting request
 * is answered (-32603 gateway_closing) on its stream before its session is closed (as a 2026-07-28
 * exchange is); the tasks before them: a task still running goes with the instance (the others report
 * it failed), its call cancelled but not written as cancelled.
 */
export function closeOnce(deps: CloseDeps): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () =>
    (closing ??= (async () => {
      deps.life.markClosed();
      try {
        await deps.tasks.close();
        deps.engine.cancelAll();
        await legacyAnswered(deps.legacyInFlight);
      } finally {
        await deps.closers();
      }
    })());
}

/** How long `close()` waits for legacy clients' requests to be answered once their calls are cancelled. */
const ANSWER_WITHIN_MS = 1_000;

/**
 * Resolves once no legacy client's request waits for its answer (their calls were just cancelled: each
 * answer is on its way to its stream), or after ANSWER_WITHIN_MS.
 */
export function legacyAnswered(inFlight: () => number, withinMs = ANSWER_WITHIN_MS): Promise<void> {
  return untilNone(inFlight, withinMs, DRAIN_POLL_MS / 4);
}
