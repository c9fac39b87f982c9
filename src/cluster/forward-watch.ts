/**
 * Requests this instance forwards to another one (a retry, a task request, a legacy session's request
 * or stream), by the instance they wait on. When that instance's death becomes known (its heartbeat
 * lapsed), every request still waiting on it is aborted at once: the client is answered here (its call
 * is gone) instead of holding a connection, and a drain, for as long as a silent peer's socket stays
 * open (a frozen process, a lost network keep a TCP connection open for minutes).
 */
import { Lifeline, type CancelSource } from '../util/lifeline.js';

export interface ForwardWatch {
  /**
   * The lifeline of a request forwarded to `instance` (its `signal` made only when asked for): ended
   * with `parent`, or when `instance` is known dead. Call `dispose` when the answer has ended.
   */
  track(instance: string, parent: CancelSource): { life: Lifeline; dispose(): void };
  /** `instance` is dead: aborts every request still waiting on it. */
  gone(instance: string): void;
  /** How many forwarded requests wait on `instance`. */
  waiting(instance: string): number;
}

export function createForwardWatch(): ForwardWatch {
  const byInstance = new Map<string, Set<Lifeline>>();
  return {
    track(instance, parent) {
      const life = new Lifeline();
      const onAbort = (): void => life.abort(parent.reason);
      if (parent.aborted) life.abort(parent.reason);
      else parent.addEventListener('abort', onAbort, { once: true });
      let set = byInstance.get(instance);
      if (!set) byInstance.set(instance, (set = new Set()));
      set.add(life);
      const mine = set;
      return {
        life,
        dispose() {
          parent.removeEventListener('abort', onAbort);
          mine.delete(life);
          if (mine.size === 0 && byInstance.get(instance) === mine) byInstance.delete(instance);
        },
      };
    },
    gone(instance) {
      const set = byInstance.get(instance);
      if (!set) return;
      byInstance.delete(instance);
      const reason = new Error(`the instance ${instance} is gone (its heartbeat lapsed)`);
      for (const life of set) life.abort(reason);
    },
    waiting: (instance) => byInstance.get(instance)?.size ?? 0,
  };
}
