/**
 * The proxy tools' definitions (seeds 000/001): one zod schema per tool checks its arguments and is
 * published as the tool's JSON Schema `inputSchema`, so what is advertised and what is checked cannot
 * drift apart.
 */
import * as z from 'zod/v4';
import { PROXY_TASK_STATUSES } from './task-status.js';

const workspace = z.string().min(1).max(200).optional().describe('A workspace handle from new_workspace (default: your own scope)');
const server = z.string().min(1).max(64).describe('A server name, as list_servers shows it');
const taskId = z.string().min(1).max(300).describe('A task id from execute_tool or list_tasks');
const timeoutMs = z.int().min(0).max(3_600_000);
const level = z
  .enum(['debug', 'info', 'notice', 'warn', 'warning', 'error', 'critical', 'alert', 'emergency'])
  .describe('Minimum level ("warn" is read as "warning")');

export const TOOL_SCHEMAS = {
  new_workspace: z.strictObject({}).describe('Opens a workspace: an independent scope of connections, events, logs and tasks. Pass its handle as `workspace`.'),
  list_servers: z
    .strictObject({ workspace })
    .describe('Lists the backend servers the gateway can reach: where each is (url, or command), whether it is connected, since when, and its last error.'),
  add_server: z
    .strictObject({
      name: z
        .string()
        .regex(/^[A-Za-z0-9_.-]{1,64}$/)
        .describe('The name to give it'),
      url: z.url().optional().describe('An MCP server over streamable HTTP (or SSE with transport "sse")'),
      transport: z.enum(['streamable-http', 'sse']).optional(),
      command: z.string().min(1).optional().describe('A server the gateway starts over stdio'),
      args: z.array(z.string()).optional(),
      workspace,
    })
    .describe('Adds a backend server for everyone (only servers the operator allowed); answers its capabilities and tools.'),
  remove_server: z.strictObject({ name: z.string().min(1).max(64), workspace }).describe('Removes a server added with add_server.'),
  get_server_status: z
    .strictObject({ server, workspace })
    .describe(
      "One server: where it is, whether it is connected (since when, last error), its capabilities, and this scope's working tasks and pending requests on it.",
    ),
  list_tools: z.strictObject({ server: server.optional(), workspace }).describe("Lists the backends' tools (all servers, or one)."),
  execute_tool: z
    .strictObject({
      server,
      tool: z.string().min(1).describe("The backend's tool name"),
      arguments: z.record(z.string(), z.unknown()).optional(),
      timeout_ms: timeoutMs.optional().describe('Past this the call goes on as a task (default 120000)'),
      workspace,
    })
    .describe("Calls a backend's tool. Past timeout_ms it goes on as a task: follow it with await_activity, get_task and get_task_result."),
  list_resources: z.strictObject({ server: server.optional(), workspace }).describe("Lists the backends' resources."),
  read_resource: z.strictObject({ server, uri: z.string().min(1), workspace }).describe('Reads a resource of a backend.'),
  list_prompts: z.strictObject({ server: server.optional(), workspace }).describe("Lists the backends' prompts."),
  get_prompt: z
    .strictObject({ server, name: z.string().min(1), arguments: z.record(z.string(), z.string()).optional(), workspace })
    .describe('Gets a prompt of a backend.'),
  get_notifications: z
    .strictObject({ server: server.optional(), workspace })
    .describe('Returns the backend notifications received since the last call, and clears them.'),
  get_logs: z
    .strictObject({ server: server.optional(), level: level.optional(), limit: z.int().min(0).max(10_000).optional(), workspace })
    .describe('Returns the newest backend log lines (default 100), filtered by server and minimum level.'),
  list_tasks: z
    .strictObject({ server: server.optional(), status: z.enum(PROXY_TASK_STATUSES).optional(), workspace })
    .describe('Lists the tasks of this scope (a task past its ttl is "expired").'),
  get_task: z.strictObject({ taskId, workspace }).describe("A task's status."),
  get_task_result: z.strictObject({ taskId, workspace }).describe("A finished task's result (or its status while it runs)."),
  cancel_task: z.strictObject({ taskId, workspace }).describe('Cancels a running task.'),
  await_activity: z
    .strictObject({
      timeout_ms: timeoutMs
        .optional()
        .describe("How long to wait (default 30000; a longer wait is cut to the gateway's proxyTools.maxAwaitTimeoutMs, 300000 by default)"),
      workspace,
    })
    .describe('Waits for activity (events, input requests, tasks ending) or the timeout, then reports events by server, working tasks and pending requests.'),
  get_elicitations: z
    .strictObject({ workspace })
    .describe('Lists the elicitation requests waiting for your answer (when you cannot be asked directly, and those of tasks).'),
  respond_to_elicitation: z
    .strictObject({
      requestId: z.string().min(1).max(300),
      action: z.enum(['accept', 'decline', 'cancel']),
      content: z.record(z.string(), z.unknown()).optional(),
      workspace,
    })
    .describe('Answers an elicitation request.'),
  get_sampling_requests: z
    .strictObject({ workspace })
    .describe('Lists the sampling requests waiting for your answer (when you cannot be asked directly, and those of tasks).'),
  respond_to_sampling: z
    .strictObject({
      requestId: z.string().min(1).max(300),
      action: z.enum(['accept', 'decline']).default('accept').describe('"decline" refuses the request (the server is told the user declined it)'),
      role: z.literal('assistant').default('assistant'),
      content: z.unknown().optional().describe('For "accept": a content block, e.g. {"type":"text","text":"..."}'),
      model: z.string().min(1).optional().describe('For "accept": the model that answered'),
      stopReason: z.string().optional(),
      workspace,
    })
    .describe('Answers a sampling request with a model message, or declines it.'),
} as const;

export type ProxyToolName = keyof typeof TOOL_SCHEMAS;

/** The tool list as tools/list shows it (`includeClientActions`: the respond_to_* family too). */
export function toolDefinitions(names: readonly ProxyToolName[]): Record<string, unknown>[] {
  return names.map((name) => {
    const schema = TOOL_SCHEMAS[name];
    const { $schema: _s, ...inputSchema } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    return { name, description: schema.description ?? name, inputSchema };
  });
}

/**
 * The proxy tools that carry on work already under way and start none: served while the gateway drains.
 * Not `await_activity`: a client that waits on it in a loop would hold every drain to its deadline.
 */
const CONTINUING: ReadonlySet<string> = new Set<ProxyToolName>([
  'get_notifications',
  'get_logs',
  'list_tasks',
  'get_task',
  'get_task_result',
  'cancel_task',
  'get_elicitations',
  'respond_to_elicitation',
  'get_sampling_requests',
  'respond_to_sampling',
]);

export function continuesWork(name: string): boolean {
  return CONTINUING.has(name);
}

export function isProxyTool(name: string): name is ProxyToolName {
  return Object.hasOwn(TOOL_SCHEMAS, name);
}
