/**
 * Which instance must serve a request (several instances behind one balancer): an MRTR retry whose
 * requestState names a call another live instance holds, or a `tasks/*` request for a task another
 * live instance holds, goes there; so does new work that reaches an instance that drains (to one that
 * takes new work). The HTTP layer forwards such a request to that instance and streams its answer
 * back; anything else (a continuation held here or by an instance that is gone, new work while
 * serving) is served here, where the usual errors explain what became of it.
 */
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import type { RequestStateCodec } from '../protocol/request-state.js';
import { RELATED_TASK_META } from '../protocol/rev-2026-07-28/tasks.js';
import { instanceOfTaskId } from './tasks/registry.js';

export interface RetryRoutingDeps {
  readonly instanceId: string;
  readonly codec: RequestStateCodec;
  /** The live owner of a call (the call directory). */
  readonly ownerOf: (callId: string) => Promise<string | undefined>;
  /** True while an instance's heartbeat is current. */
  readonly alive: (instanceId: string) => Promise<boolean>;
  /** True once this instance drains: new work goes to another instance. */
  readonly draining: () => boolean;
  /** The other instances that take new work. */
  readonly serving: () => Promise<readonly string[]>;
}

/** The other instance that must serve `req`, or undefined to serve it here. */
export type RetryRouting = (req: FrontRequest, principal: string) => Promise<string | undefined>;

export function createRetryRouting(deps: RetryRoutingDeps): RetryRouting {
  return async (req, principal) => {
    const state = req.params['requestState'];
    if (state !== undefined) {
      const holder = await deps.codec.holder(state, principal);
      if (!holder || holder.instance === deps.instanceId) return undefined;
      const owner = await deps.ownerOf(holder.call);
      return owner !== undefined && owner !== deps.instanceId ? owner : undefined;
    }
    if (!req.method.startsWith('tasks/')) {
      if (!deps.draining()) return undefined;
      const others = await deps.serving();
      return others.length > 0 ? others[Math.floor(Math.random() * others.length)] : undefined;
    }
    const meta = req.params['_meta'] as Record<string, unknown> | undefined;
    const related = meta?.[RELATED_TASK_META] as { taskId?: unknown } | undefined;
    const taskId = req.params['taskId'] ?? related?.taskId;
    const instance = typeof taskId === 'string' ? instanceOfTaskId(taskId) : undefined;
    if (instance === undefined || instance === deps.instanceId) return undefined;
    return (await deps.alive(instance)) ? instance : undefined;
  };
}
