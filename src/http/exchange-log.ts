/**
 * The one structured line per JSON-RPC exchange (method, name, result type or error code, duration),
 * written when the exchange's work settles, after its answer went out. A client that went away is
 * logged as `client_gone`, an expected error (a GatewayError, a wire error) at info, anything else at
 * warn.
 */
import { GatewayError, toWireError } from '../errors.js';
import type { Logger } from '../log.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import { background } from '../util/background.js';

export interface ExchangeLife {
  /** `performance.now()` when the exchange started. */
  readonly started: number;
  /** Aborted when the client went away. */
  readonly signal: AbortSignal;
  /** Runs once the work settled and its line is written (unlinks the exchange's signal). */
  readonly done: () => void;
}

/**
 * Logs `work`'s outcome when it settles. Its rejection is the exchange's answer (the client got it
 * already), so it is handled here and never rethrown; a logger that throws is reported as failed
 * background work (util/background.ts), never an unhandled rejection.
 */
export function logExchange(log: Logger, request: FrontRequest, work: Promise<Record<string, unknown>>, life: ExchangeLife): void {
  const method = request.method;
  const name = nameOf(request.params);
  const ms = (): number => Math.round(performance.now() - life.started);
  const logged = work.then(
    (r) => log.info({ method, name, resultType: r['resultType'], ms: ms() }, 'mcp'),
    (e: unknown) => logFailure(log, { method, name, ms: ms() }, e, life.signal),
  );
  background('log an MCP exchange', logged.finally(life.done), log);
}

function logFailure(log: Logger, line: Record<string, unknown>, e: unknown, signal: AbortSignal): void {
  // The client went away: nobody got an error, so none is logged as one.
  if (signal.aborted) return log.info({ ...line, reason: 'client_gone' }, 'mcp');
  const wire = toWireError(e);
  const reason = (wire.data as { reason?: unknown } | undefined)?.reason;
  const expected = e instanceof GatewayError || typeof (e as { code?: unknown }).code === 'number';
  if (expected) log.info({ ...line, code: wire.code, ...(reason !== undefined ? { reason } : {}) }, 'mcp');
  else log.warn({ ...line, code: wire.code, err: (e as Error).message }, 'mcp');
}

function nameOf(params: Record<string, unknown>): string | undefined {
  const v = params['name'] ?? params['uri'];
  return typeof v === 'string' ? v.slice(0, 200) : undefined;
}
