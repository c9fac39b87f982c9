/**
 * Tasks another instance holds or held (cluster mode), read from the cluster's task store. While the
 * owner lives, its answer is the truth: `tasks/*` requests are forwarded there, and a listen stream on
 * this instance follows the task through the store's announcements. Once the owner is gone, the last
 * written state answers: a finished result outlives the owner, and a task that was still running is
 * reported failed (its call went with the instance).
 */
import type { TaskStore } from '../../cluster/task-store.js';
import { GatewayError, isClusterUnavailable } from '../../errors.js';
import { isTerminal, type TaskSnapshot } from '../../protocol/rev-2026-07-28/tasks.js';
import { linkedController, sleep } from '../../util/abort.js';
import { instanceOfTaskId, visibleState } from './registry.js';

export interface TasksElsewhereDeps {
  readonly store: TaskStore;
  readonly instanceId: string;
  /** True until the instance is known gone (its heartbeat current, or only lapsed: a task is not failed for a late beat). */
  readonly alive: (instanceId: string) => Promise<boolean>;
  /** How often a follower checks that the owner still lives (its heartbeat period). */
  readonly checkEveryMs: number;
}

export interface TasksElsewhere {
  /**
   * The last state of `principal`'s task whose owner is gone; undefined when not theirs, or unknown. A
   * task whose owner is not known gone rejects `instance_unreachable`: asked here, the owner did not
   * take the request (it could not be reached), and its state cannot be told until it answers or its
   * heartbeat lapses; "not found" would make a client give up on work that may still be running.
   */
  gone(taskId: string, principal: string): Promise<TaskSnapshot | undefined>;
  /** The state of `principal`'s task another instance holds or held; undefined when unknown or not theirs. */
  load(taskId: string, principal: string): Promise<TaskSnapshot | undefined>;
  /**
   * Sends the task's state now and at every visible change, until it has ended, its owner is gone
   * (then the failed state), or `signal` aborts. Never throws.
   */
  follow(taskId: string, principal: string, signal: AbortSignal, send: (snap: TaskSnapshot) => void): Promise<void>;
}

/** What a task whose owner went away while it ran is reported as. */
function lostWithOwner(snap: TaskSnapshot, instance: string): TaskSnapshot {
  if (isTerminal(snap.status)) return snap;
  const message = `The gateway instance that held this task (${instance}) stopped; its call ended with it`;
  const { inputRequests: _pending, ...rest } = snap;
  return { ...rest, status: 'failed', statusMessage: message, error: { code: -32603, message, data: { reason: 'instance_gone' } } };
}

export function createTasksElsewhere(deps: TasksElsewhereDeps): TasksElsewhere {
  const held = (taskId: string): string | undefined => {
    const instance = instanceOfTaskId(taskId);
    return instance !== undefined && instance !== deps.instanceId ? instance : undefined;
  };

  /**
   * What the store says of `principal`'s task this instance's memory does not hold. One of this instance's
   * own is answered too: a finished task its memory forgot before its time (the bound on finished tasks
   * kept), or a task an earlier run of this instance held (it went with that run).
   */
  async function state(taskId: string, principal: string): Promise<{ snap: TaskSnapshot; revision: number; gone: boolean } | undefined> {
    if (instanceOfTaskId(taskId) === undefined) return undefined;
    const stored = await deps.store.load(taskId);
    if (!stored || stored.principal !== principal) return undefined;
    const snap = stored.snapshot as unknown as TaskSnapshot;
    const revision = stored.revision ?? 0;
    if (stored.instance === deps.instanceId) return { snap: lostWithOwner(snap, deps.instanceId), revision, gone: true };
    if (await deps.alive(stored.instance)) return { snap, revision, gone: false };
    return { snap: lostWithOwner(snap, stored.instance), revision, gone: true };
  }

  return {
    async gone(taskId, principal) {
      const s = await state(taskId, principal);
      if (s && !s.gone) throw new GatewayError('instance_unreachable', `task ${taskId.slice(0, 200)}, held by ${instanceOfTaskId(taskId) ?? '?'}`);
      return s?.snap;
    },

    async load(taskId, principal) {
      return (await state(taskId, principal))?.snap;
    },

    async follow(taskId, principal, signal, send) {
      if (held(taskId) === undefined) {
        // One of this instance's own its memory no longer holds (`state`): its last state, which no longer changes.
        const own = instanceOfTaskId(taskId) === deps.instanceId ? await state(taskId, principal).catch(() => undefined) : undefined;
        if (own && !signal.aborted) send(own.snap);
        return;
      }
      const { controller, dispose } = linkedController(signal);
      let last = '';
      let lastRevision = -1;
      // A read and an announcement can cross: an older write that arrives after a newer one is dropped
      // (what the owner's death makes of the task is final, whatever its revision).
      const emit = (snap: TaskSnapshot, revision: number, final = false): void => {
        if (controller.signal.aborted || (!final && revision < lastRevision)) return;
        lastRevision = Math.max(lastRevision, revision);
        const seen = visibleState(snap);
        if (seen !== last) {
          last = seen;
          send(snap);
        }
        if (isTerminal(snap.status)) controller.abort();
      };
      let stop: (() => Promise<void>) | undefined;
      try {
        // Listening first, then reading: a change between the two is not missed (a repeat is not sent twice).
        // Without announcements (the subscriber cannot connect) the task is still read every period.
        stop = await deps.store
          .watch(taskId, (stored) => {
            if (stored.principal === principal) emit(stored.snapshot as unknown as TaskSnapshot, stored.revision ?? 0);
          })
          .catch(() => undefined);
        for (;;) {
          // Redis away for a while: the task is read again at the next period.
          const s = await state(taskId, principal).catch((e: unknown) => {
            if (isClusterUnavailable(e)) return 'later' as const;
            throw e;
          });
          if (s === 'later') {
            await sleep(deps.checkEveryMs, controller.signal);
            continue;
          }
          if (!s) return;
          emit(s.snap, s.revision, s.gone);
          if (s.gone) return;
          await sleep(deps.checkEveryMs, controller.signal);
        }
      } catch {
        // ended, aborted, or the store failed: the stream goes on without this task
      } finally {
        dispose();
        await stop?.();
      }
    },
  };
}
