/**
 * A task's status as the proxy tools report it (seed 001, TaskManager): the tasks registry's status,
 * except that a task cancelled for running past its ttl is `expired`, not `failed`. The tasks
 * extension (`tasks/get`) has no such status, so the same task reads `failed` there, with
 * `error.data.reason` `task_expired`.
 */
import type { TaskSnapshot, TaskStatus } from '../../protocol/rev-2026-07-28/tasks.js';

export type ProxyTaskStatus = TaskStatus | 'expired';

/** Every status `list_tasks` can filter on. */
export const PROXY_TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled', 'expired'] as const satisfies readonly ProxyTaskStatus[];

/** True when the task ended because it ran past its ttl. */
export function isExpired(s: Pick<TaskSnapshot, 'status' | 'error'>): boolean {
  return s.status === 'failed' && (s.error?.data as { reason?: unknown } | undefined)?.reason === 'task_expired';
}

export function proxyStatus(s: Pick<TaskSnapshot, 'status' | 'error'>): ProxyTaskStatus {
  return isExpired(s) ? 'expired' : s.status;
}
