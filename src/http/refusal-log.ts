/**
 * A request refused before it became a JSON-RPC exchange or reached a legacy session (the gate: Origin,
 * Host, authentication; its content type; its body; a rate limit; its envelope; the requests in
 * flight), logged as one `mcp`
 * line (its status and at which check; the refusal's message is the client's, and no header or body is
 * logged) and counted (`mcp_gateway_refused_requests_total`).
 */
import type { AppOptions } from './app-options.js';

export type RefusedAt = 'gate' | 'content' | 'body' | 'rate_limit' | 'envelope' | 'in_flight';

/** Logs and counts the refusal `res` and returns it; `more`: what else its log line says. */
export function refused(opts: Pick<AppOptions, 'logger' | 'countRefusal'>, res: Response, check: RefusedAt, more: Record<string, unknown> = {}): Response {
  opts.logger.info({ status: res.status, refused: check, ...more }, 'mcp');
  opts.countRefusal?.(check, res.status);
  return res;
}
