/**
 * HTTP status for a JSON-RPC error produced by a handler, in one table. Where the 2026-07-28 spec
 * fixes a status it wins (basic/index.mdx error table; transports/streamable-http.mdx); a local
 * failure reason may carry its own (errors.ts: 503 while draining); everything else is 200.
 */
import { WireCode, httpStatusOfReason, type WireErrorObject } from '../errors.js';

const FIXED: ReadonlyMap<number, number> = new Map<number, number>([
  [WireCode.HeaderMismatch, 400],
  [WireCode.MissingRequiredClientCapability, 400],
  [WireCode.UnsupportedProtocolVersion, 400],
  [WireCode.MethodNotFound, 404],
  [WireCode.ParseError, 400],
  [WireCode.InvalidRequest, 400],
]);

/** Seconds a client should wait before retrying a 503 (another instance usually answers at once). */
export const RETRY_AFTER_SECONDS = 1;

export function httpStatusFor(error: WireErrorObject): number {
  const fixed = FIXED.get(error.code);
  if (fixed !== undefined) return fixed;
  return httpStatusOfReason((error.data as { reason?: unknown } | undefined)?.reason) ?? 200;
}

/**
 * Extra headers for an error answer with `status`: `Retry-After` on a 503, and on a 429 whose error
 * says when (`data.retryAfterMs` of a rate limit, rounded up to whole seconds).
 */
export function headersForStatus(status: number, error?: WireErrorObject): Record<string, string> {
  if (status === 503) return { 'retry-after': String(RETRY_AFTER_SECONDS) };
  const retryAfterMs = (error?.data as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  if (status === 429 && typeof retryAfterMs === 'number') return { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) };
  return {};
}
