/**
 * Whether and when a `tools/call` becomes a task (extension io.modelcontextprotocol/tasks), per tool:
 * the configured override (`mcpServers.<name>.tasks.tools.<tool>`) first, then what the backend's own
 * tool definition says (`execution.taskSupport` "optional" or "required": a long-running tool,
 * promoted at once), then the backend's and the gateway's promotion threshold.
 *
 * - `forbidden`: never a task; the call answers synchronously (or with input rounds).
 * - `optional`: a task once the call has run `promoteAfterMs` without finishing or asking for input,
 *   for a client that declared the extension on that request.
 * - `required`: the same, and a client that did not declare the extension gets -32021.
 *
 * And who sees a tool in its lists (`toolForCaller`): a tool is listed to a caller only when that
 * caller can call it — a `required` one only to callers that take tasks.
 */
import type { ServerConfig } from '../../config.js';

export type TaskSupport = 'forbidden' | 'optional' | 'required';

export interface TaskPolicy {
  readonly support: TaskSupport;
  readonly promoteAfterMs: number;
}

export interface TaskPolicySource {
  /** The gateway-wide promotion threshold (`gateway.tasks.promoteAfterMs`). */
  readonly promoteAfterMs: number;
  /** Each backend's `tasks` section, by backend name. */
  readonly servers: ReadonlyMap<string, ServerConfig['tasks']>;
  /**
   * False where calls cannot outlive their request (the edge handler): no call becomes a task of this
   * front's own; a backend's own tasks still pass through. Default true.
   */
  readonly promotes?: boolean | undefined;
}

/** What the policy needs to know of a backend. */
export interface PolicyBackend {
  readonly name: string;
  /** See `BackendPort.servesTaskToolsAsCalls`. */
  readonly servesTaskToolsAsCalls?: boolean | undefined;
}

function declaredSupport(definition: Record<string, unknown> | undefined): unknown {
  return (definition?.['execution'] as { taskSupport?: unknown } | undefined)?.taskSupport;
}

/** The policy for `tool` (the backend's own name) of `backend`; `definition` is its cached tools/list entry. */
export function taskPolicyFor(source: TaskPolicySource, backend: PolicyBackend, tool: string, definition?: Record<string, unknown>): TaskPolicy {
  const server = source.servers.get(backend.name);
  const configured = server?.tools[tool];
  const declared = declaredSupport(definition);
  const longRunning = declared === 'optional' || declared === 'required';
  // A backend's own "required" is served as optional where the backend runs the tool as a plain call
  // (a legacy backend makes it a task of its own and waits): a client without the extension still
  // gets its answer, synchronously. Elsewhere only a caller that takes a task can have it.
  const fromBackend: TaskSupport = declared === 'required' && backend.servesTaskToolsAsCalls !== true ? 'required' : 'optional';
  const support: TaskSupport = configured?.support ?? fromBackend;
  const promoteAfterMs = configured?.promoteAfterMs ?? (longRunning ? 0 : (server?.promoteAfterMs ?? source.promoteAfterMs));
  return { support, promoteAfterMs };
}

/**
 * A backend's tools/list entry as a caller sees it: undefined (left out of its list) when the tool
 * needs a task and the caller takes none (`takesTasks`: it declared the extension on this request, or
 * its dialect asks for tasks another way); otherwise the entry without `execution.taskSupport`, which
 * is 2025-11-25 vocabulary the gateway does not serve (2026-07-28 deleted it, and the legacy route
 * makes no 2025-11-25 tasks): whether a call becomes a task is decided per request. `name` is the
 * backend's own.
 */
export function toolForCaller(
  source: TaskPolicySource,
  backend: PolicyBackend,
  tool: Record<string, unknown>,
  takesTasks: boolean,
): Record<string, unknown> | undefined {
  const name = tool['name'];
  if (typeof name === 'string' && !takesTasks && taskPolicyFor(source, backend, name, tool).support === 'required') return undefined;
  const execution = tool['execution'] as Record<string, unknown> | undefined;
  if (execution === null || typeof execution !== 'object' || !('taskSupport' in execution)) return tool;
  const { taskSupport: _backends, ...others } = execution;
  const { execution: _all, ...rest } = tool;
  return Object.keys(others).length > 0 ? { ...rest, execution: others } : rest;
}
