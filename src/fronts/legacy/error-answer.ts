/**
 * A JSON-RPC error as the HTTP answer of the legacy route, before any session transport writes one:
 * its status, and `Retry-After` on a 503 (as http/status.ts does for the other fronts).
 */
import { httpStatusOfReason, type WireErrorObject } from '../../errors.js';

/** The answer; `status` defaults to the one its reason has in errors.ts (503 when it has none). */
export function errorAnswer(id: string | number | null, error: WireErrorObject, status?: number): Response {
  const answered = status ?? httpStatusOfReason((error.data as { reason?: unknown } | undefined)?.reason) ?? 503;
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error }), {
    status: answered,
    headers: { 'content-type': 'application/json', ...(answered === 503 ? { 'retry-after': '1' } : {}) },
  });
}
