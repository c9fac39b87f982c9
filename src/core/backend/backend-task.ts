/**
 * A legacy tool that can only run as a task (2025-11-25 basic/utilities/tasks: the tool declares
 * `execution.taskSupport: "required"` and the server `tasks.requests.tools.call`; a v1 server refuses
 * a plain `tools/call` to it with -32601) is run as the backend's own task and waited for, so that to
 * every caller it is one call like any other:
 *
 * 1. `tools/call` with `params.task` answers a `CreateTaskResult` (`{ task: { taskId, … } }`);
 * 2. `tasks/result` blocks until the task ends and answers its result; the input requests the task
 *    makes meanwhile travel with that request (on its stream, or on the call's exclusive session), so
 *    they reach the call through its channel as any mid-call request does;
 * 3. a call that ends first (cancelled, past its deadline) cancels the task with `tasks/cancel`:
 *    cancelling the `tasks/result` request alone would leave the task running.
 *
 * The result loses the related-task `_meta` key the backend adds (it names the backend's task, which
 * no caller knows).
 */
import type { BackendSession } from './backend-session.js';
import type { CallChannel } from './port.js';

/** 2025-11-25: the `_meta` key that ties a message to a task. */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';
/** How long the cancellation of an abandoned task may take (it is best effort: the call is already over). */
const CANCEL_TIMEOUT_MS = 5_000;

/** True when `tool` (a tools/list entry) must be called as a task of a server with `capabilities`. */
export function runsAsBackendTask(tool: Record<string, unknown> | undefined, capabilities: Record<string, unknown> | undefined): boolean {
  const declared = (tool?.['execution'] as { taskSupport?: unknown } | undefined)?.taskSupport;
  const tasks = capabilities?.['tasks'] as { requests?: { tools?: { call?: unknown } } } | undefined;
  return declared === 'required' && tasks?.requests?.tools?.call !== undefined;
}

export interface BackendTaskCall {
  /** The `tools/call` params as the backend gets them. */
  readonly params: Record<string, unknown>;
  /** Aborted when the call is cancelled: the task is cancelled too. */
  readonly signal: AbortSignal;
  /** Epoch ms by which the call must end (`callTimeoutMs`); the task's ttl asks for no longer. */
  readonly deadline: number;
  readonly channel: CallChannel;
}

/**
 * Runs one tool call as the backend's own task on `session` and resolves with the task's result.
 * Rejects as `session.request` does (a backend error, a timeout, the signal's reason); the task is
 * cancelled at the backend first when the call ended before it.
 */
export async function callAsBackendTask(session: BackendSession, call: BackendTaskCall): Promise<Record<string, unknown>> {
  const left = (): number => Math.max(1, call.deadline - Date.now());
  const created = await session.request('tools/call', { ...call.params, task: { ttl: left() } }, { signal: call.signal, timeoutMs: left() }, call.channel);
  const taskId = (created['task'] as { taskId?: unknown } | undefined)?.taskId;
  // A server that answered at once (no task after all) gave the call's result.
  if (typeof taskId !== 'string') return created;
  try {
    return withoutRelatedTask(await session.request('tasks/result', { taskId }, { signal: call.signal, timeoutMs: left() }, call.channel));
  } catch (e) {
    if (!session.closed && (call.signal.aborted || Date.now() >= call.deadline)) {
      // Its own signal: the call's is aborted already, and this request must still go out.
      await session.request('tasks/cancel', { taskId }, { signal: new AbortController().signal, timeoutMs: CANCEL_TIMEOUT_MS }).catch(() => undefined);
    }
    throw e;
  }
}

function withoutRelatedTask(result: Record<string, unknown>): Record<string, unknown> {
  const meta = result['_meta'] as Record<string, unknown> | undefined;
  if (!meta || !(RELATED_TASK_META in meta)) return result;
  const { [RELATED_TASK_META]: _task, ...rest } = meta;
  const { _meta: _old, ...out } = result;
  return Object.keys(rest).length > 0 ? { ...out, _meta: rest } : out;
}
