/**
 * Where the tasks of every instance are written as they change (cluster mode), so a task stays
 * readable from any instance: while its owner lives the request is forwarded there; once the owner is
 * gone, its last written state answers (a finished result outlives the owner; a task that was still
 * running is reported failed). Only the task's visible state goes in, never a secret.
 */
export interface StoredTask {
  readonly principal: string;
  /** The instance that held it. */
  readonly instance: string;
  /** The task as `tasks/get` showed it when last written. */
  readonly snapshot: Record<string, unknown>;
}

export interface TaskStore {
  save(taskId: string, task: StoredTask, ttlMs: number): Promise<void>;
  load(taskId: string): Promise<StoredTask | undefined>;
}
