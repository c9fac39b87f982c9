/**
 * The proxy tools' tasks (seed 001, TaskManager; seed 000 category 3): `list_tasks`, `get_task`,
 * `get_task_result`, `cancel_task`, and the views other tools show of them (`server_pending`,
 * `pending_server`). A scope sees its own tasks only; the tasks themselves are the tasks registry's.
 */
import { isTerminal } from '../../protocol/rev-2026-07-28/tasks.js';
import { knownServer, type Handler, type HandlerDeps, type ToolCtx } from './handler-deps.js';
import { ToolError, TOOL_ERRORS } from './respond.js';
import { proxyStatus } from './task-status.js';

function taskOf(deps: HandlerDeps, ctx: ToolCtx, taskId: unknown) {
  const id = String(taskId);
  const task = ctx.scope.tasks.has(id) ? deps.registry.get(id, ctx.scope.principal) : undefined;
  if (!task) throw new ToolError(TOOL_ERRORS.TASK_NOT_FOUND, `No task ${id} in this scope (it never existed, or it finished long ago)`, { taskId: id });
  return { task, meta: ctx.scope.tasks.get(id)! };
}

/** A task of the scope as the proxy tools show it; undefined once the registry forgot it. */
export function taskView(deps: HandlerDeps, ctx: ToolCtx, id: string): Record<string, unknown> | undefined {
  const task = deps.registry.get(id, ctx.scope.principal);
  const meta = ctx.scope.tasks.get(id);
  if (!task) ctx.scope.tasks.delete(id); // the registry forgot it (its retention ended)
  if (!task || !meta) return undefined;
  const s = deps.registry.snapshot(task);
  return {
    taskId: id,
    server: meta.server,
    toolName: meta.toolName,
    status: proxyStatus(s),
    ...(s.status === 'input_required'
      ? { statusMessage: 'Waiting for your answer: see pending_client_action (respond_to_elicitation, respond_to_sampling)' }
      : s.statusMessage
        ? { statusMessage: s.statusMessage }
        : {}),
    createdAt: new Date(s.createdAt).toISOString(),
    lastUpdatedAt: new Date(s.lastUpdatedAt).toISOString(),
    ...(s.ttlMs !== null ? { ttl: s.ttlMs } : {}),
  };
}

/** Working tasks of the scope, by server (category 3); `only`: that server's alone. */
export function pendingServer(deps: HandlerDeps, ctx: ToolCtx, only?: string): { server: string; working_tasks: unknown[] }[] {
  const by = new Map<string, unknown[]>();
  for (const id of ctx.scope.tasks.keys()) {
    const v = taskView(deps, ctx, id);
    if (!v || (v['status'] !== 'working' && v['status'] !== 'input_required')) continue;
    const server = String(v['server']);
    if (only !== undefined && server !== only) continue;
    if (!by.has(server)) by.set(server, []);
    by.get(server)!.push({ taskId: id, toolName: v['toolName'], status: v['status'] });
  }
  return [...by].map(([server, working_tasks]) => ({ server, working_tasks }));
}

export const TASK_HANDLERS = {
  async list_tasks(deps, ctx, args) {
    knownServer(deps, args['server']);
    const tasks = [...ctx.scope.tasks.keys()]
      .map((id) => taskView(deps, ctx, id))
      .filter((v): v is Record<string, unknown> => v !== undefined)
      .filter((v) => (args['server'] === undefined || v['server'] === args['server']) && (args['status'] === undefined || v['status'] === args['status']));
    return { tasks };
  },

  async get_task(deps, ctx, args) {
    const { task } = taskOf(deps, ctx, args['taskId']);
    deps.registry.read(task); // a client's read: a single instance's drain waits for it to see the end
    return { task: taskView(deps, ctx, String(args['taskId'])) };
  },

  async get_task_result(deps, ctx, args) {
    const { task } = taskOf(deps, ctx, args['taskId']);
    const s = deps.registry.read(task);
    const view = taskView(deps, ctx, task.id);
    if (s.status === 'completed') return { ...view, result: s.result };
    if (s.status === 'failed') return { ...view, error: s.error };
    return { ...view, note: s.status === 'cancelled' ? 'The task was cancelled.' : 'Not finished yet: await_activity wakes when it ends.' };
  },

  async cancel_task(deps, ctx, args) {
    const { task } = taskOf(deps, ctx, args['taskId']);
    const before = deps.registry.snapshot(task);
    if (isTerminal(before.status)) {
      return { task: taskView(deps, ctx, task.id), note: `It had already ended (${proxyStatus(before)}); nothing was cancelled.` };
    }
    deps.registry.cancel(task, 'the task was cancelled (cancel_task)');
    return { task: taskView(deps, ctx, task.id) };
  },
} satisfies Record<'list_tasks' | 'get_task' | 'get_task_result' | 'cancel_task', Handler>;
