/**
 * What a scope's backend calls tell the scope besides their results (seed 000, categories 1 and 2):
 * every log line goes to the scope's log ring, and the call's other notifications become `notification`
 * events (kept for `get_notifications` too): progress (of a call's progress not delivered yet, only the
 * newest event stays), resource updates, anything else the backend sent on the call's session, and log
 * lines at or above the work's `logEventLevel`. And the end of a pending client action nobody answered:
 * `elicitation_expired` / `sampling_expired` with why (seed 001, PendingRequestsManager), so an item
 * never leaves `pending_client_action` silently.
 */
import { LoggingLevelSchema } from '@modelcontextprotocol/core';
import type { LoggingLevel } from '@modelcontextprotocol/server';
import type { Call } from '../../core/calls/call.js';
import { GatewayError, toWireError } from '../../errors.js';
import type { Scope, Work } from './scope.js';

const LEVELS = LoggingLevelSchema.options;

/** True when `level` is `min` or above. */
export function atLeast(level: LoggingLevel, min: LoggingLevel): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(min);
}

/** Passes `call`'s events after `since` on to the scope; returns the new position. */
export function relayToScope(scope: Scope, work: Work, call: Call, since: number): number {
  for (const { event } of call.events(since).events) {
    if (event.kind === 'log') {
      scope.logs.push(call.backend, event.level, event.params);
      if (atLeast(event.level, work.logEventLevel)) scope.notify(work.server, 'notifications/message', event.params, work.taskId);
    } else if (event.kind === 'progress') {
      // A chatty backend must not flood the agent: of a call's progress not delivered yet, the newest stays.
      scope.notify(work.server, 'notifications/progress', { ...event.progress }, work.taskId, `progress:${work.id}`);
    } else {
      scope.notify(work.server, event.method, event.params, work.taskId);
    }
  }
  return Math.max(since, call.lastEventSeq);
}

/** Why a pending client action ended unanswered: the `reason` of its `*_expired` event. */
export type ExpiryReason = 'timed_out' | 'withdrawn' | 'not_relayed' | 'server_removed' | 'server_disconnected' | 'call_ended';

/** The backend errors that mean its connection (or process) went away under the call. */
const CONNECTION_LOST = new Set(['backend_closed', 'backend_unavailable']);

/**
 * Why the input request `key` of `call` stopped being pending, when nobody answered it; undefined when
 * the client answered or refused it (or, for a stateless backend's round, the work goes on: its
 * answer carried it on). `serverGone`: the work's server was removed.
 */
export function expiryOf(call: Call, key: string, workEnded: boolean, serverGone: boolean): { reason: ExpiryReason; message: string } | undefined {
  const fate = call.inputFate(key);
  if (fate === 'answered' || fate === 'refused' || (fate === undefined && !workEnded)) return undefined;
  if (serverGone) return { reason: 'server_removed', message: 'The server was removed (remove_server): the request went with it' };
  if (fate === 'timed_out') return { reason: 'timed_out', message: 'Nobody answered it in time (gateway.sampling.timeoutMs); the server was told so' };
  if (fate === 'withdrawn') return { reason: 'withdrawn', message: 'The server withdrew it (its own timeout, or it no longer needs the answer)' };
  if (fate === 'lost') return { reason: 'server_disconnected', message: "The server's connection closed under it (it crashed, restarted or went away)" };
  if (fate === 'not_relayed') return { reason: 'not_relayed', message: 'The gateway refused it to the server: the request waiting on it cannot be asked it' };
  const outcome = call.outcome;
  if (outcome?.kind === 'error') {
    const lost = outcome.error instanceof GatewayError && CONNECTION_LOST.has(outcome.error.code);
    const message = `The call that asked it ended: ${toWireError(outcome.error).message}`;
    return { reason: lost ? 'server_disconnected' : 'call_ended', message };
  }
  return { reason: 'call_ended', message: 'The call that asked it ended without waiting for the answer' };
}

/** The event type of an input request's end, by its method (undefined: not a pending client action kind). */
export function expiredType(method: string): 'elicitation_expired' | 'sampling_expired' | undefined {
  return method === 'elicitation/create' ? 'elicitation_expired' : method === 'sampling/createMessage' ? 'sampling_expired' : undefined;
}
