/**
 * How every proxy tool answers (seed 000 "Response structure summary"): the tool's own result as JSON
 * text, then the scope's events since the last response (delivered once, here or through
 * `await_activity`), then the pending client actions (in every response while any wait). Failures are
 * tool errors (`isError`) with the seed's codes.
 */
import type { Scope } from './scope.js';
import type { ClientAction, WorkTracker } from './work.js';

export const TOOL_ERRORS = {
  SESSION_NOT_FOUND: 'TOOL_ERR_SESSION_NOT_FOUND',
  SERVER_NOT_FOUND: 'TOOL_ERR_SERVER_NOT_FOUND',
  TOOL_NOT_FOUND: 'TOOL_ERR_NOT_FOUND',
  EXECUTION_FAILED: 'TOOL_ERR_EXECUTION_FAILED',
  TIMEOUT: 'TOOL_ERR_TIMEOUT',
  SERVER_DISCONNECTED: 'TOOL_ERR_SERVER_DISCONNECTED',
  // Beyond the seed's list: arguments that fail the tool's schema, a request the gateway refuses.
  INVALID_ARGUMENTS: 'TOOL_ERR_INVALID_ARGUMENTS',
  NOT_ALLOWED: 'TOOL_ERR_NOT_ALLOWED',
  TASK_NOT_FOUND: 'TOOL_ERR_TASK_NOT_FOUND',
  REQUEST_NOT_FOUND: 'TOOL_ERR_REQUEST_NOT_FOUND',
  LIMIT: 'TOOL_ERR_LIMIT',
} as const;

export type ToolErrorCode = (typeof TOOL_ERRORS)[keyof typeof TOOL_ERRORS];

/** A failure a proxy tool reports as a structured tool error. */
export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

const text = (value: unknown) => ({ type: 'text' as const, text: JSON.stringify(value) });

/** The pending client actions as the seed shows them. */
export function pendingClientAction(actions: readonly ClientAction[]): { elicitations: unknown[]; sampling_requests: unknown[] } {
  const elicitations: unknown[] = [];
  const sampling_requests: unknown[] = [];
  for (const a of actions) {
    const base = { requestId: a.requestId, server: a.server, ...(a.taskId ? { taskId: a.taskId } : {}) };
    if (a.method === 'elicitation/create') {
      elicitations.push({
        ...base,
        message: a.params['message'],
        ...(a.params['mode'] === 'url' ? { mode: 'url', url: a.params['url'] } : { schema: a.params['requestedSchema'] }),
      });
    } else if (a.method === 'sampling/createMessage') {
      sampling_requests.push({ ...base, messages: a.params['messages'], maxTokens: a.params['maxTokens'], systemPrompt: a.params['systemPrompt'] });
    }
  }
  return { elicitations, sampling_requests };
}

/**
 * The tool result: `body` (or the error), then undelivered events (unless `withEvents` is false: an
 * answer its client will most likely never read leaves them for the next one), then pending client actions.
 */
export function respond(scope: Scope, work: WorkTracker, body: unknown, isError = false, withPending = true, withEvents = true): Record<string, unknown> {
  const content: Record<string, unknown>[] = [text(body)];
  const { events, missed } = withEvents ? scope.events.takeNew() : { events: [], missed: 0 };
  if (events.length > 0 || missed > 0) {
    content.push(text({ events_since_last_response: events, ...(missed > 0 ? { events_missed: missed } : {}) }));
  }
  const pending = withPending ? pendingClientAction(work.actions(scope)) : { elicitations: [], sampling_requests: [] };
  if (pending.elicitations.length > 0 || pending.sampling_requests.length > 0) content.push(text({ pending_client_action: pending }));
  return isError ? { content, isError: true } : { content };
}

export function errorBody(e: ToolError): Record<string, unknown> {
  return { error: { code: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) } };
}
