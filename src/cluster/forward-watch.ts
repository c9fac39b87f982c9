/**
 * Requests this instance forwards to another one (a retry, a task request, a legacy session's request
 * or stream), by the instance they wait on. When that instance's death becomes known (its heartbeat
 * lapsed), every request still waiting on it is aborted at once: the client is answered here (its call
 * is gone) instead of holding a connection, and a drain, for as long as a silent peer's socket stays
 * open (a frozen process, a lost network keep a TCP connection open for minutes).
 */
import { linkedController } from '../util/abort.js';
import type { CancelSource } from '../util/lifeline.js';

export interface ForwardWatch {
  /** A signal for a request forwarded to `instance`: aborted with `parent`, or when `instance` is known dead. Call `dispose` when the answer has ended. */
  track(instance: string, parent: CancelSource): { signal: AbortSignal; dispose(): void };
  /** `instance` is dead: aborts every request still waiting on it. */
  gone(instance: string): void;
  /** How many forwarded requests wait on `instance`. */
  waiting(instance: string): number;
}

export function createForwardWatch(): ForwardWatch {
  const byInstance = new Map<string, Set<AbortController>>();
  return {
    track(instance, parent) {
      const link = linkedController(parent);
      let set = byInstance.get(instance);
      if (!set) byInstance.set(instance, (set = new Set()));
      set.add(link.controller);
      const mine = set;
      return {
        signal: link.controller.signal,
        dispose() {
          link.dispose();
          mine.delete(link.controller);
          if (mine.size === 0 && byInstance.get(instance) === mine) byInstance.delete(instance);
        },
      };
    },
    gone(instance) {
      const set = byInstance.get(instance);
      if (!set) return;
      byInstance.delete(instance);
      const reason = new Error(`the instance ${instance} is gone (its heartbeat lapsed)`);
      for (const controller of set) controller.abort(reason);
    },
    waiting: (instance) => byInstance.get(instance)?.size ?? 0,
  };
}
