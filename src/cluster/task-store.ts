/**
 * Where the tasks of every instance are written as they change (cluster mode), so a task stays
 * readable from any instance: while its owner lives the request is forwarded there; once the owner is
 * gone, its last written state answers (a finished result outlives the owner; a task that was still
 * running is reported failed). Only the task's visible state goes in, never a secret. Each write is
 * also announced, so a listener on another instance follows the task as it changes.
 */
export interface StoredTask {
  readonly principal: string;
  /** The instance that held it. */
  readonly instance: string;
  /** Counts the task's writes: a reader drops a write older than one it has seen. */
  readonly revision?: number | undefined;
  /** The task as `tasks/get` showed it when last written. */
  readonly snapshot: Record<string, unknown>;
}

export interface TaskStore {
  /** Writes the task and tells its watchers, in one step. */
  save(taskId: string, task: StoredTask, ttlMs: number): Promise<void>;
  load(taskId: string): Promise<StoredTask | undefined>;
  /** Hears every later `save` of the task (on any instance); resolves once listening, to the function that stops it. */
  watch(taskId: string, listener: (task: StoredTask) => void): Promise<() => Promise<void>>;
}
