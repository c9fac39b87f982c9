/**
 * The request rate limit on the 2024-11-05 HTTP+SSE transport (gateway.rateLimits.requestsPerMinute):
 * a message POSTed to `/messages` is acknowledged 202 before it is served, and its answer goes out on
 * the session's open event stream, so a request over the budget is answered there, as a JSON-RPC error
 * (`data.reason: "rate_limited"`, `data.retryAfterMs`), not with an HTTP status. Charged on the instance
 * that holds the session (a message forwarded there was not charged where it arrived).
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { toWireError } from '../../errors.js';

/** Charges `cost` requests to `principal`: undefined when admitted, else the refusal. */
export type ChargeRequests = (principal: string, cost: number) => Promise<Error | undefined>;

/**
 * The error answer for `message` when it is a request (a method and an id) over `principal`'s budget;
 * undefined when it may be served (notifications and responses are never charged).
 */
export async function overMessageLimit(charge: ChargeRequests | undefined, principal: string, message: object): Promise<JSONRPCMessage | undefined> {
  const m = message as { method?: unknown; id?: unknown };
  if (!charge || typeof m.method !== 'string' || m.id === undefined || m.id === null) return undefined;
  const refusal = await charge(principal, 1).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
  if (!refusal) return undefined;
  return { jsonrpc: '2.0', id: m.id as string | number, error: toWireError(refusal) } as JSONRPCMessage;
}
