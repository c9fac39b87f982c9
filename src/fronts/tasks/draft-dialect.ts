/**
 * The draft SEP-2322 "persistent workflow" dialect (seed 002, "Persistent Workflow"), served on its own
 * path (`/mcp/draft`) because the final suite requires `tasks/result` to be -32601 on `/mcp`. Same
 * envelope as 2026-07-28 (per-request `_meta`, standard headers), same dispatcher, same calls and the
 * same task registry: a task created on one endpoint is the same task on the other.
 *
 * - `tools/call` with the draft's `params.task` (`{ ttl }`) becomes a task at once; the answer is the
 *   draft's nested `{ task: { taskId, status, statusMessage, createdAt, lastUpdatedAt, ttl, pollInterval } }`.
 *   Without the hint a call is served exactly as on `/mcp` (rounds, or a task for a client that declared
 *   the extension).
 * - `tasks/get` answers the draft's task fields (no inlined result or input requests).
 * - `tasks/result` waits until the task needs input or has ended, then answers the draft's incomplete
 *   result (`inputRequests`, no requestState: the task id carries the continuation), the call's final
 *   result, or its JSON-RPC error; always with `_meta["io.modelcontextprotocol/related-task"]`.
 * - `tasks/input_response` answers pending inputs of the task named in
 *   `_meta["io.modelcontextprotocol/related-task"].taskId` (unknown keys ignored) and acknowledges.
 * - `tasks/cancel` cancels and answers the task's fields.
 * - `tools/list` lists the tools that need a task too (the `task` hint asks for one).
 * Status names are the draft's (the same five as the extension's).
 */
import { ProtocolError, WireCode, invalidParams } from '../../errors.js';
import { admit, type FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import { META } from '../../protocol/rev-2026-07-28/envelope.js';
import type { ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import { RELATED_TASK_META, withoutRelatedTask, type TaskSnapshot, type TaskStatus } from '../../protocol/rev-2026-07-28/tasks.js';
import { abortReason } from '../../util/abort.js';
import type { Dialect, RequestContext } from '../dialect.js';
import type { RequestHandler } from '../mrtr/dispatch.js';
import { answersFor } from './methods.js';
import type { Task, TaskRegistry } from './registry.js';

export interface DraftDialectDeps {
  /** The shared request dispatcher (fronts/mrtr/dispatch.ts). */
  readonly handle: RequestHandler;
  readonly registry: TaskRegistry;
  readonly stamp: ResultStamp;
}

const STATUS_MESSAGES: Record<TaskStatus, string> = {
  working: 'The task is working; poll tasks/get',
  input_required: 'Input is required to proceed: call tasks/result',
  completed: 'The task has completed: call tasks/result',
  failed: 'The task failed: call tasks/result for the error',
  cancelled: 'The task was cancelled',
};

function draftTask(t: TaskSnapshot): Record<string, unknown> {
  return {
    taskId: t.taskId,
    status: t.status,
    statusMessage: t.status === 'failed' || t.status === 'cancelled' ? (t.statusMessage ?? STATUS_MESSAGES[t.status]) : STATUS_MESSAGES[t.status],
    createdAt: new Date(t.createdAt).toISOString(),
    lastUpdatedAt: new Date(t.lastUpdatedAt).toISOString(),
    ttl: t.ttlMs,
    ...(t.pollIntervalMs !== undefined ? { pollInterval: t.pollIntervalMs } : {}),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The draft's requested lifetime (`params.task.ttl`), when it is a positive integer. */
function requestedTtl(hint: Record<string, unknown>): number | undefined {
  const ttl = hint['ttl'];
  return typeof ttl === 'number' && Number.isInteger(ttl) && ttl > 0 ? ttl : undefined;
}

export function createDraftDialect(deps: DraftDialectDeps): Dialect {
  const { registry, stamp } = deps;
  const stamped = (result: Record<string, unknown>, taskId?: string): Record<string, unknown> => {
    const meta = { ...((result['_meta'] as Record<string, unknown> | undefined) ?? {}) };
    if (taskId !== undefined) meta[RELATED_TASK_META] = { taskId };
    meta[META.serverInfo] = stamp.serverInfo;
    return { ...result, _meta: meta };
  };

  const taskOf = (taskId: unknown, principal: string): Task => {
    if (typeof taskId !== 'string' || taskId.length === 0) throw invalidParams('taskId must be a non-empty string');
    const task = registry.get(taskId, principal);
    if (!task) throw registry.notFound(taskId);
    return task;
  };

  /** Waits until the task needs input or has ended (bounded by its ttl: an expired task is cancelled). */
  async function settled(task: Task, signal: AbortSignal): Promise<TaskSnapshot> {
    for (;;) {
      const snap = registry.read(task);
      if (snap.status !== 'working') return snap;
      if (signal.aborted) throw abortReason(signal);
      await registry.nextChange(task, signal);
    }
  }

  async function handle(req: FrontRequest, ctx: RequestContext): Promise<Record<string, unknown>> {
    switch (req.method) {
      case 'tools/call': {
        const hint = req.params['task'];
        if (!isObject(hint)) return deps.handle(req, ctx);
        const r = await deps.handle(req, ctx, { promoteAfterMs: 0, taskTtlMs: requestedTtl(hint) });
        if (r['resultType'] !== 'task') return r; // ended (or asked for input) before it could become a task
        const task = taskOf(r['taskId'], ctx.principal);
        return stamped({ resultType: 'complete', task: draftTask(registry.snapshot(task)) });
      }
      case 'tasks/get':
        return stamped({ resultType: 'complete', ...draftTask(registry.read(taskOf(req.params['taskId'], ctx.principal))) });
      case 'tasks/cancel': {
        const task = taskOf(req.params['taskId'], ctx.principal);
        registry.cancel(task);
        return stamped({ resultType: 'complete', ...draftTask(registry.snapshot(task)) });
      }
      case 'tasks/result': {
        const task = taskOf(req.params['taskId'], ctx.principal);
        const snap = await settled(task, ctx.signal);
        switch (snap.status) {
          case 'input_required':
            return stamped({ resultType: 'input_required', inputRequests: snap.inputRequests ?? {} }, task.id);
          case 'completed':
            return stamped({ ...withoutRelatedTask(snap.result ?? {}), resultType: 'complete' }, task.id);
          case 'failed':
            throw new ProtocolError(snap.error?.code ?? WireCode.InternalError, snap.error?.message ?? 'The task failed', snap.error?.data);
          default:
            throw new ProtocolError(WireCode.InternalError, snap.statusMessage ?? 'The task was cancelled', { taskId: task.id, status: snap.status });
        }
      }
      case 'tasks/input_response': {
        const related = (req.params['_meta'] as Record<string, unknown> | undefined)?.[RELATED_TASK_META];
        if (!isObject(related)) throw invalidParams(`tasks/input_response needs _meta["${RELATED_TASK_META}"].taskId`);
        const task = taskOf(related['taskId'], ctx.principal);
        registry.answer(task, answersFor(registry, task, req.params['inputResponses']));
        return stamped({ resultType: 'complete' }, task.id);
      }
      case 'tools/list':
        // A draft client asks for a task with its `task` hint: the tools that need one are its too.
        return deps.handle(req, ctx, { takesTasks: true });
      default:
        return deps.handle(req, ctx);
    }
  }

  return {
    name: 'SEP-2322 draft (persistent workflow)',
    admit,
    handle,
    isListen: () => false,
    listen: () => Promise.reject(new ProtocolError(WireCode.MethodNotFound, 'subscriptions/listen is served on /mcp')),
  };
}
