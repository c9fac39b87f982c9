/**
 * A request refused before it became a JSON-RPC exchange or reached a legacy session (the gate: Origin,
 * Host, authentication; its content type; its body; a rate limit), logged as one `mcp` line: its status
 * and at which check. The refusal's message is the client's; no header or body is logged.
 */
import type { Logger } from '../log.js';

export type RefusedAt = 'gate' | 'content' | 'body' | 'rate_limit';

/** Logs the refusal `res` and returns it. */
export function refused(logger: Logger, res: Response, check: RefusedAt): Response {
  logger.info({ status: res.status, refused: check }, 'mcp');
  return res;
}
