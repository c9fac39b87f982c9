/**
 * The request rate limit where a POST arrives (gateway.rateLimits.requestsPerMinute;
 * fronts/rate-limits.ts): each JSON-RPC request in the body is charged to its principal's bucket, and
 * over the budget the POST is answered 429 with `Retry-After` and a JSON-RPC error (`rate_limited`,
 * `retryAfterMs`). Charged once, on the instance the request reached first (a forwarded one is not
 * charged again).
 *
 * Not charged: notifications and responses (a legacy client's answer to an input request continues
 * work already admitted), and the retry of a parked call's round — a tools/call, prompts/get or
 * resources/read whose `requestState` this gateway sealed for a call it holds, for this principal
 * (`isParkedRetry`, which opens it): the call was charged when it started; charging its rounds would
 * make an elicitation-heavy tool cost more than a plain one, and could refuse a client mid-call. Any
 * other requestState is charged like a new request: a 2026-07-28 backend's state (its next round is a
 * new call, and such a state could be replayed), a forged one, and everything on a legacy session's
 * route (its client sends no requestState of ours).
 */
import type { RequestId } from '../protocol/rev-2026-07-28/envelope.js';
import type { AppOptions } from './app-options.js';
import { thrownReply } from './replies.js';

/** The methods whose requests may be MRTR retries. */
const ROUND_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Whether a requestState continues a call this gateway parked for `principal` (it opens the state). */
export type IsParkedRetry = (requestState: unknown, principal: string) => Promise<boolean>;

/** True for a JSON-RPC request (a method and an id) that is not the retry of a parked call's round. */
async function charged(message: unknown, principal: string, isParkedRetry: IsParkedRetry | undefined): Promise<boolean> {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return false;
  const m = message as { method?: unknown; id?: unknown; params?: { requestState?: unknown } };
  if (typeof m.method !== 'string' || m.id === undefined || m.id === null) return false;
  const state = m.params?.requestState;
  if (!ROUND_METHODS.has(m.method) || state === undefined || !isParkedRetry) return true;
  return !(await isParkedRetry(state, principal));
}

/** How many requests `body` charges (a 2025-03-26 batch may hold several), and the id to answer a refusal with. */
export async function chargedRequests(body: unknown, principal: string, isParkedRetry?: IsParkedRetry): Promise<{ count: number; id: RequestId | null }> {
  const messages = Array.isArray(body) ? body : [body];
  const counted = await Promise.all(messages.map((m) => charged(m, principal, isParkedRetry)));
  const count = counted.filter(Boolean).length;
  const id = !Array.isArray(body) && count === 1 ? ((body as { id: RequestId }).id ?? null) : null;
  return { count, id };
}

/** The 429 answer when `principal` is over its request budget; undefined when the body may go on (or requests are not limited). */
export async function overRequestLimit(
  opts: Pick<AppOptions, 'chargeRequests' | 'logger'>,
  principal: string,
  body: unknown,
  isParkedRetry?: IsParkedRetry,
): Promise<Response | undefined> {
  if (!opts.chargeRequests) return undefined;
  const { count, id } = await chargedRequests(body, principal, isParkedRetry);
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
