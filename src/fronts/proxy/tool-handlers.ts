/**
 * What each proxy tool does. Every handler gets its scope and the proxy tool's own backend call, and
 * returns the tool's body (respond.ts adds events and pending client actions) or throws a ToolError.
 * This file: the backend's lists, `execute_tool`, `read_resource`, `get_prompt`, notifications and
 * logs, and the answers to pending client actions; the server tools (server-tools.ts), the task tools
 * (task-tools.ts) and `await_activity` (activity.ts) have files of their own.
 */
import type { LoggingLevel } from '@modelcontextprotocol/server';
import { ClientRefusal, type BackendPort, type CatalogKind } from '../../core/backend/port.js';
import { operationOf } from '../../core/calls/ask-patterns.js';
import type { StartCall } from '../../core/calls/call-engine.js';
import { inputCapabilitiesOf } from '../../core/input-capabilities.js';
import { GatewayError, bareMessage, toWireError } from '../../errors.js';
import { resourceUriProblem } from '../../protocol/resource-uri.js';
import { ACTIVITY_HANDLERS } from './activity.js';
import { attend } from './attend.js';
import { shows, type PolicyKind } from '../../core/access-policy.js';
import {
  accessOf,
  checkAllowed,
  checkResourceAllowed,
  innerCapabilities,
  knownServer,
  serverOf,
  type Args,
  type Handler,
  type HandlerDeps,
  type ToolCtx,
} from './handler-deps.js';
import { ToolError, TOOL_ERRORS, pendingClientAction } from './respond.js';
import type { Work } from './scope.js';
import { SERVER_HANDLERS } from './server-tools.js';
import { TASK_HANDLERS, pendingServer, taskView } from './task-tools.js';
import type { ProxyToolName } from './tools.js';

export type { HandlerDeps } from './handler-deps.js';

async function listOf(deps: HandlerDeps, ctx: ToolCtx, kind: CatalogKind, only: unknown): Promise<unknown[]> {
  const caps = inputCapabilitiesOf(innerCapabilities(ctx.call.caps));
  const access = accessOf(deps, ctx);
  const all = only === undefined ? deps.servers.list() : [{ name: String(only), backend: serverOf(deps, only) }];
  // What the caller may not use is not listed to it.
  const entries = all.filter((e) => !access.deniesServer(e.name));
  const allowed = (server: string, item: Record<string, unknown>): boolean => shows(access, kind as PolicyKind, server, item);
  const out: unknown[] = [];
  await Promise.all(
    entries.map(async (e, i) => {
      try {
        const items = await e.backend.list(kind, { caps });
        out[i] = items.filter((item) => allowed(e.name, item)).map((item) => ({ server: e.name, ...item }));
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
  const caps = inputCapabilitiesOf(capabilities);
  const spec: StartCall = {
    principal: ctx.call.principal,
    scope: ctx.scope.sub,
    method,
    backend,
    params,
    // A resource read by URI (no template here) is learned under its backend's resources/read alone.
    operation: operationOf({ backend, name }, method, caps),
    caps,
    capabilities,
  };
  const call = await deps.engine.start(spec);
  // Backend log lines at or above the level the client chose for this request (else the configured one) are events too.
  const logEventLevel = (ctx.call.logLevel as LoggingLevel | undefined) ?? deps.settings.logEventLevel;
  const work = deps.tracker.track(ctx.scope, { call, server, name, method, resumable: true, logEventLevel }, { caps: ctx.call.caps });
  const resume = (inputResponses: Record<string, Record<string, unknown>>, requestState: string | undefined) =>
    deps.engine.start({ ...spec, inputResponses, requestState, continues: true });
  return { work, resume };
}

/** Waits on a call for a proxy tool that does not make tasks (get_prompt, read_resource). */
async function runToEnd(deps: HandlerDeps, ctx: ToolCtx, server: string, method: string, params: Args, name: string): Promise<unknown> {
  const backend = serverOf(deps, server);
  if (method === 'prompts/get') checkAllowed(deps, ctx, 'prompts', server, name);
  else await checkResourceAllowed(deps, ctx, server, backend, name);
  const { work, resume } = await startWork(deps, ctx, server, backend, method, params, name);
  try {
    const end = await attend({
      tracker: deps.tracker,
      log: deps.logger,
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

const LEVEL_OF: Record<string, LoggingLevel> = { warn: 'warning' };

/** A respond_to_* outcome: nothing, or why it could not be taken (the request stays as it was). */
function answered(problem: string | undefined): void {
  if (problem) throw new ToolError(problem.startsWith('No pending') ? TOOL_ERRORS.REQUEST_NOT_FOUND : TOOL_ERRORS.INVALID_ARGUMENTS, problem);
}

export const HANDLERS: Record<ProxyToolName, Handler> = {
  ...SERVER_HANDLERS,
  ...TASK_HANDLERS,
  ...ACTIVITY_HANDLERS,

  async new_workspace(deps, ctx) {
    const handle = deps.scopes.mintWorkspace(ctx.call.principal);
    if (!handle) throw new ToolError(TOOL_ERRORS.LIMIT, 'Too many workspaces are open; unused ones are forgotten after a while');
    return { workspace: handle, note: 'Pass it as `workspace` to every proxy tool that should use this workspace.' };
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
    checkAllowed(deps, ctx, 'tools', server, tool);
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
        log: deps.logger,
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
      task = await deps.registry.create(work.call, ctx.call.principal, { resume, inputTimeoutMs: backend.parkTimeoutMs });
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
