/**
 * What each proxy tool does. Every handler gets its scope and the proxy tool's own backend call, and
 * returns the tool's body (respond.ts adds events and pending client actions) or throws a ToolError.
 */
import type { LoggingLevel } from '@modelcontextprotocol/server';
import { ClientRefusal, type BackendCall, type BackendPort, type CatalogKind } from '../../core/backend/port.js';
import type { CallEngine, StartCall } from '../../core/calls/call-engine.js';
import { inputCapabilitiesOf, type InputCapabilities } from '../../core/capabilities.js';
import { GatewayError, bareMessage, limitError, toWireError } from '../../errors.js';
import type { Shares } from '../../cluster/shares.js';
import type { Logger } from '../../log.js';
import { abortReason } from '../../util/abort.js';
import { background } from '../../util/background.js';
import { isTerminal } from '../../protocol/rev-2026-07-28/tasks.js';
import { resourceUriProblem } from '../../protocol/resource-uri.js';
import type { TaskRegistry } from '../tasks/registry.js';
import { attend } from './attend.js';
import { ToolError, TOOL_ERRORS, pendingClientAction } from './respond.js';
import type { Scope, Work } from './scope.js';
import type { ProxyEvent } from './scope-events.js';
import type { Scopes } from './scopes.js';
import type { ProxyServers } from './servers.js';
import type { ProxyToolName } from './tools.js';
import type { WorkTracker } from './work.js';

export interface ProxySettings {
  readonly executeTimeoutMs: number;
  readonly awaitTimeoutMs: number;
  readonly maxAwaitTimeoutMs: number;
  /** `await_activity` calls waiting at once, per principal and in total. */
  readonly maxAwaitPerPrincipal: number;
  readonly maxAwaitTotal: number;
}

export interface HandlerDeps {
  readonly engine: CallEngine;
  readonly registry: TaskRegistry;
  readonly scopes: Scopes;
  readonly tracker: WorkTracker;
  readonly servers: ProxyServers;
  readonly settings: ProxySettings;
  readonly logger: Logger;
  /** Where `await_activity` waits are counted (per principal and in total). */
  readonly shares: Shares;
}

export interface ToolCtx {
  readonly scope: Scope;
  /** The proxy tool's own call. */
  readonly call: BackendCall;
}

type Args = Record<string, unknown>;
type Handler = (deps: HandlerDeps, ctx: ToolCtx, args: Args) => Promise<unknown>;

/**
 * What the gateway declares when it calls a backend for the proxy tools: every input request can be
 * held as a pending client action, so elicitation and sampling are always declared; roots only when
 * the client itself can answer them (there is no `respond_to_roots`).
 */
function innerCapabilities(client: InputCapabilities): Record<string, unknown> {
  return { elicitation: { form: {}, url: {} }, sampling: {}, ...(client.roots ? { roots: {} } : {}) };
}

function serverOf(deps: HandlerDeps, name: unknown): BackendPort {
  const entry = deps.servers.get(String(name));
  if (!entry) throw new ToolError(TOOL_ERRORS.SERVER_NOT_FOUND, `No server named ${String(name)}; list_servers shows them`, { server: name });
  return entry.backend;
}

async function listOf(deps: HandlerDeps, ctx: ToolCtx, kind: CatalogKind, only: unknown): Promise<unknown[]> {
  const caps = inputCapabilitiesOf(innerCapabilities(ctx.call.caps));
  const entries = only === undefined ? deps.servers.list() : [{ name: String(only), backend: serverOf(deps, only) }];
  const out: unknown[] = [];
  await Promise.all(
    entries.map(async (e, i) => {
      try {
        const items = await e.backend.list(kind, { caps });
        out[i] = items.map((item) => ({ server: e.name, ...item }));
      } catch (err) {
        out[i] = [{ server: e.name, error: (err as Error).message }];
      }
    }),
  );
  return out.flat();
}

/** Starts a backend call for the scope and tracks it. */
async function startWork(deps: HandlerDeps, ctx: ToolCtx, server: string, backend: BackendPort, method: string, params: Args, name: string) {
  if (!backend.up && backend.health().state === 'down') {
    throw new ToolError(TOOL_ERRORS.SERVER_DISCONNECTED, `${server} is not reachable: ${backend.health().lastError ?? 'down'}`, { server });
  }
  const capabilities = innerCapabilities(ctx.call.caps);
  const spec: StartCall = {
    principal: ctx.call.principal,
    scope: ctx.scope.sub,
    method,
    backend,
    params,
    caps: inputCapabilitiesOf(capabilities),
    capabilities,
  };
  const call = await deps.engine.start(spec);
  const work = deps.tracker.track(ctx.scope, { call, server, name, method, resumable: true }, { caps: ctx.call.caps });
  const resume = (inputResponses: Record<string, Record<string, unknown>>, requestState: string | undefined) =>
    deps.engine.start({ ...spec, inputResponses, requestState });
  return { work, resume };
}

/** Waits on a call for a proxy tool that does not make tasks (get_prompt, read_resource). */
async function runToEnd(deps: HandlerDeps, ctx: ToolCtx, server: string, method: string, params: Args, name: string): Promise<unknown> {
  const { work, resume } = await startWork(deps, ctx, server, serverOf(deps, server), method, params, name);
  try {
    const end = await attend({
      tracker: deps.tracker,
      work,
      channel: ctx.call.channel,
      caps: ctx.call.caps,
      signal: ctx.call.signal,
      timeoutMs: deps.settings.executeTimeoutMs,
      resume,
      unanswerable: 'refuse',
    });
    if (end.kind === 'timeout' || end.kind === 'needs-input')
      throw new ToolError(TOOL_ERRORS.TIMEOUT, `${method} on ${server} did not finish in ${deps.settings.executeTimeoutMs} ms`, { server });
    if (end.kind === 'failed') throw new ToolError(TOOL_ERRORS.EXECUTION_FAILED, `${method} on ${server} failed: ${end.message}`, { server });
    return outcomeBody(end.outcome, server, method);
  } finally {
    if (!work.call.done) work.call.cancel(new GatewayError('cancelled', 'the proxy tool ended'));
    deps.tracker.release(work);
  }
}

function outcomeBody(outcome: NonNullable<Work['call']['outcome']>, server: string, method = 'tools/call'): unknown {
  if (outcome.kind === 'error') {
    const wire = toWireError(outcome.error);
    if (method !== 'tools/call' && wire.code === -32602 && /not found/i.test(wire.message)) {
      throw new ToolError(TOOL_ERRORS.TOOL_NOT_FOUND, bareMessage(wire.message), { server });
    }
    throw new ToolError(TOOL_ERRORS.EXECUTION_FAILED, `Tool execution failed: ${wire.message}`, { server, error: wire });
  }
  if (outcome.outcome.kind !== 'complete') throw new ToolError(TOOL_ERRORS.EXECUTION_FAILED, `The backend answered with ${outcome.outcome.kind}`, { server });
  return { result: outcome.outcome.result };
}

function taskOf(deps: HandlerDeps, ctx: ToolCtx, taskId: unknown) {
  const id = String(taskId);
  const task = ctx.scope.tasks.has(id) ? deps.registry.get(id, ctx.scope.principal) : undefined;
  if (!task) throw new ToolError(TOOL_ERRORS.TASK_NOT_FOUND, `No task ${id} in this scope (it never existed, or it finished long ago)`, { taskId: id });
  return { task, meta: ctx.scope.tasks.get(id)! };
}

function taskView(deps: HandlerDeps, ctx: ToolCtx, id: string): Record<string, unknown> | undefined {
  const task = deps.registry.get(id, ctx.scope.principal);
  const meta = ctx.scope.tasks.get(id);
  if (!task) ctx.scope.tasks.delete(id); // the registry forgot it (its retention ended)
  if (!task || !meta) return undefined;
  const s = deps.registry.snapshot(task);
  return {
    taskId: id,
    server: meta.server,
    toolName: meta.toolName,
    status: s.status,
    ...(s.status === 'input_required'
      ? { statusMessage: 'Waiting for your answer: see pending_client_action (respond_to_elicitation, respond_to_sampling)' }
      : s.statusMessage
        ? { statusMessage: s.statusMessage }
        : {}),
    createdAt: new Date(s.createdAt).toISOString(),
    lastUpdatedAt: new Date(s.lastUpdatedAt).toISOString(),
  };
}

/** Working tasks of the scope, by server (category 3). */
function pendingServer(deps: HandlerDeps, ctx: ToolCtx, only?: string): { server: string; working_tasks: unknown[] }[] {
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

/**
 * Waits for the scope's next event, at most `timeoutMs`, holding one of the principal's await shares
 * (a refused share is a TOOL_ERR_LIMIT tool error naming the bound). Ends at once, with its timer gone
 * and its share given back, when the call is cancelled (rejects) or its client's connection closes.
 */
async function waitForActivity(deps: HandlerDeps, ctx: ToolCtx, timeoutMs: number): Promise<'event' | 'timeout' | 'client_gone'> {
  const { maxAwaitPerPrincipal, maxAwaitTotal } = deps.settings;
  const held = await deps.shares.take(ctx.call.principal, { kind: 'await', perPrincipal: maxAwaitPerPrincipal, total: maxAwaitTotal });
  if (!held.ok) {
    const own = held.whose === 'principal';
    const limit = own ? 'gateway.proxyTools.maxAwaitPerPrincipal' : 'gateway.proxyTools.maxAwaitTotal';
    const max = own ? maxAwaitPerPrincipal : maxAwaitTotal;
    deps.logger.info({ principal: ctx.call.principal, limit }, 'await_activity refused: limit reached');
    // The same refusal as every other fair share, as a tool error.
    const refused = limitError({ whose: held.whose, what: 'await_activity calls', limit, max, free: 'let one return (or cancel it) before starting another' });
    throw new ToolError(TOOL_ERRORS.LIMIT, refused.message, refused.data as Record<string, unknown>);
  }
  const connection = ctx.call.connection;
  const timer = new AbortController();
  const t = setTimeout(() => timer.abort(), timeoutMs);
  t.unref?.();
  try {
    await ctx.scope.events.next(AbortSignal.any([ctx.call.signal, timer.signal, ...(connection ? [connection] : [])]));
    return 'event';
  } catch {
    if (ctx.call.signal.aborted) throw abortReason(ctx.call.signal);
    return connection?.aborted ? 'client_gone' : 'timeout';
  } finally {
    clearTimeout(t);
    background('release an await_activity share', held.release(), deps.logger);
  }
}

const LEVEL_OF: Record<string, LoggingLevel> = { warn: 'warning' };

/** A respond_to_* outcome: nothing, or why it could not be taken (the request stays as it was). */
function answered(problem: string | undefined): void {
  if (problem) throw new ToolError(problem.startsWith('No pending') ? TOOL_ERRORS.REQUEST_NOT_FOUND : TOOL_ERRORS.INVALID_ARGUMENTS, problem);
}

/** A `server` filter must name a server (a typo would otherwise look like "nothing happened"). */
function knownServer(deps: HandlerDeps, server: unknown): void {
  if (server !== undefined) serverOf(deps, server);
}

export const HANDLERS: Record<ProxyToolName, Handler> = {
  async new_workspace(deps, ctx) {
    const handle = deps.scopes.mintWorkspace(ctx.call.principal);
    if (!handle) throw new ToolError(TOOL_ERRORS.LIMIT, 'Too many workspaces are open; unused ones are forgotten after a while');
    return { workspace: handle, note: 'Pass it as `workspace` to every proxy tool that should use this workspace.' };
  },

  async list_servers(deps) {
    return {
      servers: deps.servers.list().map((e) => {
        const h = e.backend.health();
        return { name: e.name, source: e.source, status: h.state, ...(h.lastError ? { lastError: h.lastError } : {}) };
      }),
    };
  },

  async add_server(deps, ctx, args) {
    const added = await deps.servers.add(args as never, ctx.call.principal);
    deps.scopes.broadcast('server_added', added.name, { name: added.name });
    const h = added.backend.health();
    return { added: added.name, status: h.state, ...(h.lastError ? { lastError: h.lastError } : {}) };
  },

  async remove_server(deps, ctx, args) {
    await deps.servers.remove(String(args['name']), ctx.call.principal);
    deps.scopes.broadcast('server_removed', String(args['name']), { name: args['name'] });
    return { removed: args['name'] };
  },

  async list_tools(deps, ctx, args) {
    return { tools: await listOf(deps, ctx, 'tools', args['server']) };
  },

  async list_resources(deps, ctx, args) {
    return { resources: await listOf(deps, ctx, 'resources', args['server']) };
  },

  async list_prompts(deps, ctx, args) {
    return { prompts: await listOf(deps, ctx, 'prompts', args['server']) };
  },

  async read_resource(deps, ctx, args) {
    const problem = resourceUriProblem(args['uri']);
    if (problem) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, problem);
    return runToEnd(deps, ctx, String(args['server']), 'resources/read', { uri: args['uri'] }, String(args['uri']));
  },

  async get_prompt(deps, ctx, args) {
    const params: Args = { name: args['name'], ...(args['arguments'] !== undefined ? { arguments: args['arguments'] } : {}) };
    return runToEnd(deps, ctx, String(args['server']), 'prompts/get', params, String(args['name']));
  },

  async execute_tool(deps, ctx, args) {
    const server = String(args['server']);
    const tool = String(args['tool']);
    const backend = serverOf(deps, server);
    const caps = inputCapabilitiesOf(innerCapabilities(ctx.call.caps));
    const tools = await backend.list('tools', { caps }).catch(() => backend.cachedList('tools', caps));
    if (tools && !tools.some((t) => t['name'] === tool)) {
      throw new ToolError(TOOL_ERRORS.TOOL_NOT_FOUND, `${server} has no tool ${tool}; list_tools shows them`, { server, tool });
    }
    const params: Args = { name: tool, arguments: args['arguments'] ?? {} };
    const { work, resume } = await startWork(deps, ctx, server, backend, 'tools/call', params, tool);
    const timeoutMs = (args['timeout_ms'] as number | undefined) ?? deps.settings.executeTimeoutMs;
    let end;
    try {
      end = await attend({
        tracker: deps.tracker,
        work,
        channel: ctx.call.channel,
        caps: ctx.call.caps,
        signal: ctx.call.signal,
        timeoutMs,
        resume,
        unanswerable: 'hand-over',
      });
    } catch (e) {
      work.call.cancel(new GatewayError('cancelled', 'the client went away'));
      deps.tracker.release(work);
      throw e;
    }
    if (end.kind === 'done' || end.kind === 'failed') {
      deps.tracker.release(work);
      if (end.kind === 'failed') throw new ToolError(TOOL_ERRORS.EXECUTION_FAILED, `Tool execution failed: ${end.message}`, { server, tool });
      return outcomeBody(end.outcome, server);
    }
    // Past its timeout: the call goes on as a task (the same tasks as tasks/get serves).
    let task;
    try {
      task = await deps.registry.create(work.call, ctx.call.principal, { resume });
    } catch (e) {
      work.call.cancel(new GatewayError('cancelled', 'it could not become a task'));
      deps.tracker.release(work);
      if (e instanceof GatewayError && e.code === 'task_limit')
        throw new ToolError(TOOL_ERRORS.LIMIT, 'The call ran past timeout_ms and no more tasks may be held; it was cancelled');
      throw e;
    }
    ctx.scope.tasks.set(task.id, { server, toolName: tool });
    deps.tracker.promoted(work, task.id);
    ctx.scope.events.add('task_created', server, { taskId: task.id, toolName: tool });
    const needsInput = end.kind === 'needs-input';
    return {
      timeout: !needsInput,
      ...(needsInput ? { needs_input: true } : {}),
      task: taskView(deps, ctx, task.id),
      server_pending: pendingServer(deps, ctx, server)[0] ?? { server, working_tasks: [] },
      note: needsInput
        ? `${server} asked for input this client answers with respond_to_elicitation / respond_to_sampling (see pending_client_action); the call goes on as a task.`
        : `Showing pending state for server '${server}' only. Use await_activity for all servers, and get_task_result for the result.`,
    };
  },

  async get_notifications(deps, ctx, args) {
    knownServer(deps, args['server']);
    return { notifications: ctx.scope.takeNotifications(args['server'] as string | undefined) };
  },

  async get_logs(deps, ctx, args) {
    knownServer(deps, args['server']);
    const raw = args['level'] as string | undefined;
    const level = raw === undefined ? undefined : (LEVEL_OF[raw] ?? (raw as LoggingLevel));
    const logs = ctx.scope.logs.read({ server: args['server'] as string | undefined, level, limit: (args['limit'] as number | undefined) ?? 100 });
    return {
      logs: logs.map((l) => ({ timestamp: l.timestamp, server: l.server, level: l.level, ...(l.logger ? { logger: l.logger } : {}), message: l.data })),
      ...(ctx.scope.logs.dropped > 0 ? { rotated_out: ctx.scope.logs.dropped } : {}),
    };
  },

  async list_tasks(deps, ctx, args) {
    knownServer(deps, args['server']);
    const tasks = [...ctx.scope.tasks.keys()]
      .map((id) => taskView(deps, ctx, id))
      .filter((v): v is Record<string, unknown> => v !== undefined)
      .filter((v) => (args['server'] === undefined || v['server'] === args['server']) && (args['status'] === undefined || v['status'] === args['status']));
    return { tasks };
  },

  async get_task(deps, ctx, args) {
    taskOf(deps, ctx, args['taskId']);
    return { task: taskView(deps, ctx, String(args['taskId'])) };
  },

  async get_task_result(deps, ctx, args) {
    const { task } = taskOf(deps, ctx, args['taskId']);
    const s = deps.registry.snapshot(task);
    const view = taskView(deps, ctx, task.id);
    if (s.status === 'completed') return { ...view, result: s.result };
    if (s.status === 'failed') return { ...view, error: s.error };
    return { ...view, note: s.status === 'cancelled' ? 'The task was cancelled.' : 'Not finished yet: await_activity wakes when it ends.' };
  },

  async cancel_task(deps, ctx, args) {
    const { task } = taskOf(deps, ctx, args['taskId']);
    const before = deps.registry.snapshot(task).status;
    if (isTerminal(before)) {
      return { task: taskView(deps, ctx, task.id), note: `It had already ended (${before}); nothing was cancelled.` };
    }
    deps.registry.cancel(task, 'the task was cancelled (cancel_task)');
    return { task: taskView(deps, ctx, task.id) };
  },

  async await_activity(deps, ctx, args) {
    const { scope } = ctx;
    const timeoutMs = Math.min(deps.settings.maxAwaitTimeoutMs, (args['timeout_ms'] as number | undefined) ?? deps.settings.awaitTimeoutMs);
    let triggers: Record<string, unknown>[];
    if (scope.events.hasNew) triggers = [{ type: 'immediate' }];
    else {
      const woke = await waitForActivity(deps, ctx, timeoutMs);
      // Nobody reads this answer now (unless the client resumes its stream): the events stay for the next one.
      if (woke === 'client_gone') return { triggers: [{ type: 'client_gone' }], events: [] };
      triggers = woke === 'timeout' ? [{ type: 'timeout' }] : [];
    }
    const { events, missed } = scope.events.takeNew();
    if (triggers.length === 0) {
      for (const e of events)
        triggers.push(
          e.type === 'server_disconnected' ? { type: 'server_disconnected', server: e.server } : { type: 'event', server: e.server, eventType: e.type },
        );
    }
    const byServer = new Map<string, ProxyEvent[]>();
    for (const e of events) {
      if (!byServer.has(e.server)) byServer.set(e.server, []);
      byServer.get(e.server)!.push(e);
    }
    return {
      triggers,
      events: [...byServer].map(([server, list]) => ({ server, events: list })),
      ...(missed > 0 ? { events_missed: missed } : {}),
      pending_server: pendingServer(deps, ctx),
      pending_client: pendingClientAction(deps.tracker.actions(scope)),
      ...(events.length > 0 ? { lastEventId: events.at(-1)!.id } : {}),
    };
  },

  async get_elicitations(deps, ctx) {
    return { elicitations: pendingClientAction(deps.tracker.actions(ctx.scope)).elicitations };
  },

  async respond_to_elicitation(deps, ctx, args) {
    const answer: Args = { action: args['action'], ...(args['action'] === 'accept' && args['content'] !== undefined ? { content: args['content'] } : {}) };
    answered(deps.tracker.answer(ctx.scope, String(args['requestId']), 'elicitation/create', answer));
    return { answered: args['requestId'] };
  },

  async get_sampling_requests(deps, ctx) {
    return { sampling_requests: pendingClientAction(deps.tracker.actions(ctx.scope)).sampling_requests };
  },

  async respond_to_sampling(deps, ctx, args) {
    const requestId = String(args['requestId']);
    if (args['action'] === 'decline') {
      // -1: the code the MCP specification gives a user's rejection of a sampling request.
      answered(deps.tracker.refuse(ctx.scope, requestId, 'sampling/createMessage', new ClientRefusal(-1, 'The user declined the sampling request')));
      return { declined: requestId };
    }
    if (args['content'] === undefined || args['model'] === undefined) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, 'To accept, give content and model');
    const answer: Args = {
      role: args['role'] ?? 'assistant',
      content: args['content'],
      model: args['model'],
      ...(args['stopReason'] !== undefined ? { stopReason: args['stopReason'] } : {}),
    };
    answered(deps.tracker.answer(ctx.scope, requestId, 'sampling/createMessage', answer));
    return { answered: requestId };
  },
};
