/**
 * Which instance must serve a request (several instances behind one balancer): an MRTR retry whose
 * requestState names a call another live instance holds, or a `tasks/*` request for a task another
 * live instance holds, goes there; a call of a proxy tool goes to the home of its principal's proxy
 * state; new work that reaches an instance that drains goes to one that takes new work. The HTTP layer forwards such a request to that instance and streams its answer
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
  /** True until an instance is known gone: its heartbeat is current or only lapsed (while Redis is away: as last seen). */
  readonly alive: (instanceId: string) => Promise<boolean>;
  /** True once this instance drains or closed (it takes no new work): new work goes to another instance. */
  readonly stopping: () => boolean;
  /** One of the other instances that take new work, if there is one. */
  readonly anyServing: () => Promise<string | undefined>;
  /** The proxy tools, when they are on: their calls are served where the principal's proxy state lives. */
  readonly proxy?: {
    readonly isTool: (name: string) => boolean;
    /** The home of `principal`'s proxy state (claimed for `claimant` when it has none). */
    readonly homeOf: (principal: string, claimant: string | undefined) => Promise<string | undefined>;
  };
}

/** The other instance that must serve `req`, or undefined to serve it here. */
export type RetryRouting = (req: FrontRequest, principal: string) => Promise<string | undefined>;

export function createRetryRouting(deps: RetryRoutingDeps): RetryRouting {
  return async (req, principal) => {
    const state = req.params['requestState'];
    if (state !== undefined) {
      const sealed = await deps.codec.sealedOwner(state, principal);
      if (!sealed || sealed.instance === deps.instanceId) return undefined;
      // A call lives where it started, the instance its requestState names (only that instance ever
      // registers it): that instance, while it stands, serves the retry, or says how the call ended
      // (a result kept for this retry, or why it is gone). No call directory lookup on the way.
      return (await deps.alive(sealed.instance)) ? sealed.instance : undefined;
    }
    if (!req.method.startsWith('tasks/')) {
      const stopping = deps.stopping();
      // A listen stream is not moved while this instance stops: it is refused here, and the client opens it anew
      // through the balancer (a forwarded stream would hold the drain open until its deadline).
      if (stopping && req.method === 'subscriptions/listen') return undefined;
      const name = req.params['name'];
      if (deps.proxy && req.method === 'tools/call' && typeof name === 'string' && deps.proxy.isTool(name)) {
        // Where the principal's proxy state lives; with none, here, or (stopping) where new work goes.
        const home = await deps.proxy.homeOf(principal, stopping ? await deps.anyServing() : deps.instanceId);
        if (home !== undefined) return home !== deps.instanceId ? home : undefined;
      }
      return stopping ? deps.anyServing() : undefined;
    }
    const meta = req.params['_meta'] as Record<string, unknown> | undefined;
    const related = meta?.[RELATED_TASK_META] as { taskId?: unknown } | undefined;
    const taskId = req.params['taskId'] ?? related?.taskId;
    const instance = typeof taskId === 'string' ? instanceOfTaskId(taskId) : undefined;
    if (instance === undefined || instance === deps.instanceId) return undefined;
    return (await deps.alive(instance)) ? instance : undefined;
  };
}
