/**
 * How a failed call on a legacy backend session is read, in one place: the error the call ends with,
 * and what becomes of the session it ran on — `keep` it, `discard` it (it must never serve another
 * call), or `probe` the backend and discard the session unless it is alive.
 *
 * A session is kept when the backend itself answered (an error response ends its side of the call),
 * and a shared session (streamable HTTP, many calls) whatever ended one of its calls, unless the
 * transport failed; then only a stale session (HTTP 404: the backend restarted and no longer knows
 * it) is discarded at once, the others are probed (a busy backend keeps its parked calls). An
 * exclusive session whose call ended without the backend's own answer (cancelled, timed out, a
 * transport failure) is discarded, so a late backend request can never reach another call.
 */
import { GatewayError, isJsonRpcError } from '../../errors.js';
import { REQUEST_TIMEOUT_CODE, isLocalTimeout } from './backend-session.js';
import { ResetBeforeAnswer } from './http-exchange.js';

export type SessionFate = 'keep' | 'discard' | 'probe';

export interface FailedCall {
  /** What the call throws. */
  readonly error: unknown;
  readonly session: SessionFate;
}

export interface FailureContext {
  /** The backend's name, for the errors. */
  readonly backend: string;
  /** True when the caller's signal had aborted (cancelled, or its client went away). */
  readonly aborted: boolean;
  /** True when the session was closing or closed. */
  readonly sessionClosed: boolean;
  /** True when the session serves many calls at once (requests correlated by the wire). */
  readonly shared: boolean;
  /** When the call's `callTimeoutMs` runs out (epoch ms). */
  readonly deadline: number;
  readonly now?: number;
}

/** Timers and the wall clock may disagree by a little: a -32001 this close to our deadline is ours. */
export const TIMER_SLACK_MS = 50;

/** Reads `e`, which a call's request on its session threw. Never throws. */
export function classifyFailure(e: unknown, ctx: FailureContext): FailedCall {
  const code = (e as { code?: unknown } | null)?.code;
  // The backend answered with an error response: its side of the call is over.
  const answered = !ctx.aborted && isJsonRpcError(e) && code !== REQUEST_TIMEOUT_CODE;
  const kept: SessionFate = answered || ctx.shared ? 'keep' : 'discard';
  // Ours is the SDK's deadline having passed; a -32001 before it is the backend's: a request of its
  // own (an elicitation, say) timed out on its side (v1 sends the same code and data).
  if (isLocalTimeout(e) && (ctx.now ?? Date.now()) >= ctx.deadline - TIMER_SLACK_MS) {
    return { error: new GatewayError('backend_timeout', `${ctx.backend} (the call ran past callTimeoutMs)`, { cause: e }), session: kept };
  }
  if (code === REQUEST_TIMEOUT_CODE && !ctx.aborted) return { error: new GatewayError('backend_request_expired', ctx.backend, { cause: e }), session: kept };
  if (ctx.sessionClosed || (e as Error | null)?.message === 'Not connected') {
    return { error: new GatewayError('backend_closed', ctx.backend, { cause: e }), session: kept };
  }
  if (e instanceof ResetBeforeAnswer && !ctx.aborted) {
    // Sent, then the connection reset before any answer: the call may have run, and is not sent again.
    const detail = `${ctx.backend} (the connection was reset after the call was sent: it may have run, and was not sent again)`;
    return { error: new GatewayError('backend_closed', detail, { cause: e }), session: ctx.shared ? 'probe' : 'discard' };
  }
  if (!ctx.aborted && !(e instanceof GatewayError) && !isJsonRpcError(e)) {
    // A transport failure (connection refused, reset): the session is unusable — known to be stale
    // (HTTP 404), or until the backend is found alive.
    const stale = code === 404;
    return { error: new GatewayError('backend_unavailable', ctx.backend, { cause: e }), session: stale || !ctx.shared ? 'discard' : 'probe' };
  }
  return { error: e, session: kept };
}
