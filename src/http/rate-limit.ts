/**
 * The request rate limit where a POST arrives (gateway.rateLimits.requestsPerMinute;
 * fronts/rate-limits.ts): each JSON-RPC request in the body is charged to its principal's bucket, and
 * over the budget the POST is answered 429 with `Retry-After` and a JSON-RPC error (`rate_limited`,
 * `retryAfterMs`). Charged once, on the instance the request reached first (a forwarded one is not
 * charged again).
 *
 * Not charged: notifications and responses (a legacy client's answer to an input request continues
 * work already admitted), and MRTR retries — a tools/call, prompts/get or resources/read carrying
 * `requestState` continues a call that was charged when it started; charging its rounds would make an
 * elicitation-heavy tool cost more than a plain one, and a client could be refused in the middle of a
 * call it was allowed to make. (A forged requestState is refused as such, -32602, before any call.)
 */
import type { RequestId } from '../protocol/rev-2026-07-28/envelope.js';
import type { AppOptions } from './app-options.js';
import { thrownReply } from './replies.js';

/** The methods whose requests may be MRTR retries. */
const ROUND_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** True for a JSON-RPC request (a method and an id) that is not an MRTR retry. */
function charged(message: unknown): boolean {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return false;
  const m = message as { method?: unknown; id?: unknown; params?: { requestState?: unknown } };
  if (typeof m.method !== 'string' || m.id === undefined || m.id === null) return false;
  return !(ROUND_METHODS.has(m.method) && m.params?.requestState !== undefined);
}

/** How many requests `body` charges (a 2025-03-26 batch may hold several), and the id to answer a refusal with. */
export function chargedRequests(body: unknown): { count: number; id: RequestId | null } {
  const messages = Array.isArray(body) ? body : [body];
  const count = messages.filter(charged).length;
  const id = !Array.isArray(body) && count === 1 ? ((body as { id: RequestId }).id ?? null) : null;
  return { count, id };
}

/** The 429 answer when `principal` is over its request budget; undefined when the body may go on (or requests are not limited). */
export async function overRequestLimit(opts: Pick<AppOptions, 'chargeRequests' | 'logger'>, principal: string, body: unknown): Promise<Response | undefined> {
  if (!opts.chargeRequests) return undefined;
  const { count, id } = chargedRequests(body);
  if (count === 0) return undefined;
  let refusal: Error | undefined;
  try {
    refusal = await opts.chargeRequests(principal, count);
  } catch (e) {
    return thrownReply(id, e); // a fault of the buckets (Redis away is not one: it counts locally)
  }
  if (!refusal) return undefined;
  opts.logger.debug({ requests: count }, 'over the request rate limit: answered 429');
  return thrownReply(id, refusal);
}
