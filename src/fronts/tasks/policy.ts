/**
 * Whether and when a `tools/call` becomes a task (extension io.modelcontextprotocol/tasks), per tool:
 * the configured override (`mcpServers.<name>.tasks.tools.<tool>`) first, then what the backend's own
 * tool definition says (`execution.taskSupport` "optional" or "required" on a 2025-11-25 tool: a
 * long-running tool, promoted at once), then the backend's and the gateway's promotion threshold.
 *
 * - `forbidden`: never a task; the call answers synchronously (or with input rounds).
 * - `optional`: a task once the call has run `promoteAfterMs` without finishing or asking for input,
 *   for a client that declared the extension on that request.
 * - `required`: the same, and a client that did not declare the extension gets -32021.
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
}

/** The policy for `tool` (the backend's own name) of `backend`; `definition` is its cached tools/list entry. */
export function taskPolicyFor(source: TaskPolicySource, backend: string, tool: string, definition?: Record<string, unknown>): TaskPolicy {
  const server = source.servers.get(backend);
  const configured = server?.tools[tool];
  const declared = (definition?.['execution'] as { taskSupport?: unknown } | undefined)?.taskSupport;
  const longRunning = declared === 'optional' || declared === 'required';
  // A backend's own "required" is served as optional: the gateway runs the tool as a plain call and
  // promotes it, so a client without the extension still gets its answer (synchronously).
  const support: TaskSupport = configured?.support ?? 'optional';
  const promoteAfterMs = configured?.promoteAfterMs ?? (longRunning ? 0 : (server?.promoteAfterMs ?? source.promoteAfterMs));
  return { support, promoteAfterMs };
}
