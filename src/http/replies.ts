/**
 * The HTTP layer's own answers: a JSON-RPC error body with the status the gate or the error table
 * gives it (status.ts), and the 405 of a dialect path that only takes POST.
 */
import { WireCode, toWireError, type WireErrorObject } from '../errors.js';
import type { RequestId } from '../protocol/rev-2026-07-28/envelope.js';
import { jsonResponse } from './exchange.js';
import { headersForStatus, httpStatusFor } from './status.js';

export function errorBody(id: RequestId | null, code: number, message: string, data?: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** A JSON-RPC error refused at the gate (no request id yet), with its HTTP status and extra headers. */
export function refusal(code: number, message: string, status: number, headers: Record<string, string> = {}): Response {
  return jsonResponse(errorBody(null, code, message), status, headers);
}

/** A wire error as the answer, with `status` (by default the error table's; a Retry-After with 503). */
export function wireErrorReply(id: RequestId | null, error: WireErrorObject, status = httpStatusFor(error)): Response {
  return jsonResponse(errorBody(id, error.code, error.message, error.data), status, headersForStatus(status, error));
}

/** Anything thrown, as a JSON-RPC error answer (toWireError, the one boundary). */
export function thrownReply(id: RequestId | null, thrown: unknown, status?: number): Response {
  const error = toWireError(thrown);
  return wireErrorReply(id, error, status ?? httpStatusFor(error));
}

/** GET/DELETE/PUT/PATCH on a dialect path that no legacy session takes. */
export function methodNotAllowed(): Response {
  return refusal(WireCode.MethodNotFound, 'Method Not Allowed: this endpoint accepts POST only', 405, { allow: 'POST' });
}

/** `res` with `set` applied to its headers; a copy when they are immutable (a response this gateway did not build). */
export function withHeaders(res: Response, set: (headers: Headers) => void): Response {
  try {
    set(res.headers);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    set(headers);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}
