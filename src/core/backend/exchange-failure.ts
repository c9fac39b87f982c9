/**
 * How a failed HTTP exchange with a 2026-07-28 backend is told (the modern backend's client, the task
 * leg; at the edge too): whether its request can have reached the server decides.
 */
import { GatewayError } from '../../errors.js';

/**
 * Codes that say a request never reached its server: no connection was made (refused, no route, no
 * such host, the connect timed out). Any other failure may have come after the server read it.
 */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT', // undici's (fetch)
  'ERR_CONNECT_TIMEOUT', // http-exchange.ts's ConnectTimeout
  'ERR_BACKEND_TOKEN_UNAVAILABLE', // backend-credentials.ts: no token, so nothing was sent
]);

/** Statuses a call may have run before: the server failed (500), or a proxy lost its answer (502, 504). */
const MAY_HAVE_RUN = new Set([500, 502, 504]);

/** The error codes of `e` and of what caused it, outermost first. */
function* codesOf(e: unknown): Generator<string> {
  for (let at: unknown = e, depth = 0; at && depth < 6; at = (at as { cause?: unknown }).cause, depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string') yield code;
  }
}

/** True when `e` (or what caused it) says its request never reached the server. */
export function neverSent(e: unknown): boolean {
  for (const code of codesOf(e)) if (NEVER_SENT.has(code)) return true;
  return false;
}

/** The HTTP status the SDK's client error carries (`data.status`), if the server answered with one. */
export function httpStatusOf(e: unknown): number | undefined {
  const status = (e as { data?: { status?: unknown } } | null)?.data?.status;
  return typeof status === 'number' ? status : undefined;
}

/**
 * The error of a request to a 2026-07-28 backend whose HTTP exchange failed. One that never reached
 * the backend, or that it refused with an HTTP status, is `backend_unavailable` ("retry later"); a
 * `tools/call` that may have reached it (the connection broke after it was sent, or the response was
 * cut) may have run, and is `backend_closed`: a client must not take it for one it can simply send again.
 */
export function exchangeFailure(detail: string, method: string, e: unknown): GatewayError {
  const call = method === 'tools/call';
  // An HTTP error status: the backend refused the call (a 403 for the gateway's credentials, a 429, a
  // 503), except a 500, or a proxy's 502 or 504, which may come after it ran.
  const status = httpStatusOf(e);
  if (status !== undefined) {
    if (call && MAY_HAVE_RUN.has(status))
      return new GatewayError('backend_closed', `${detail} (HTTP ${status} after the call was sent: it may have run)`, { cause: e });
    return new GatewayError('backend_unavailable', `${detail} (HTTP ${status})`, { cause: e });
  }
  if (call && !neverSent(e)) {
    // A runtime that gives its network errors no code (workerd: "Network connection lost." for a
    // refused connection and for a reset alike) cannot tell either: the call may have run.
    const coded = !codesOf(e).next().done;
    const why = coded ? 'the connection failed after the call was sent' : 'the connection failed, and whether the call reached it cannot be told';
    return new GatewayError('backend_closed', `${detail} (${why}: it may have run)`, { cause: e });
  }
  return new GatewayError('backend_unavailable', detail, { cause: e });
}
