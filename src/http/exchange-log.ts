/**
 * The one structured line per JSON-RPC exchange (method, name, the caller's principal, result type or
 * error code, duration),
 * written when the exchange's work settles, after its answer went out. A client that went away is
 * logged as `client_gone`, an expected error (a GatewayError, a wire error) at info with its message,
 * reason and what caused it (`cause`: the messages under it, e.g. the connect error under a
 * `backend_unavailable`), anything else at warn.
 */
import { carriesWireCode, GatewayError, toWireError } from '../errors.js';
import type { Logger } from '../log.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import { background } from '../util/background.js';
import { uriForLog, uriHider } from '../util/uri-for-log.js';

export interface ExchangeLife {
  /** `performance.now()` when the exchange started. */
  readonly started: number;
  /** Aborted when the client went away (the answer's lifeline, or an AbortSignal). */
  readonly signal: { readonly aborted: boolean };
  /** Runs once the work settled and its line is written (unlinks the exchange's signal). */
  readonly done: () => void;
}

/**
 * Logs `work`'s outcome when it settles. Its rejection is the exchange's answer (the client got it
 * already), so it is handled here and never rethrown; a logger that throws is reported as failed
 * background work (util/background.ts), never an unhandled rejection.
 */
export function logExchange(log: Logger, request: FrontRequest, principal: string, work: Promise<Record<string, unknown>>, life: ExchangeLife): void {
  const method = request.method;
  const name = nameOf(request.params);
  // A URI may carry a caller's values (`?token=…`): its query values are never logged, here or in an error.
  const hide = uriHider(request.params['uri']);
  const ms = (): number => Math.round(performance.now() - life.started);
  // One reaction: the line, then `done` whatever the logger did (a throw is reported by background).
  const logged = work.then(
    (r) => {
      try {
        log.info({ method, name, principal, resultType: r['resultType'], ms: ms() }, 'mcp');
      } finally {
        life.done();
      }
    },
    (e: unknown) => {
      try {
        logFailure(log, { method, name, principal, ms: ms() }, e, life.signal, hide);
      } finally {
        life.done();
      }
    },
  );
  background('log an MCP exchange', logged, log);
}

function logFailure(
  log: Logger,
  line: Record<string, unknown>,
  e: unknown,
  signal: { readonly aborted: boolean },
  hide: (text: string) => string = (text) => text,
): void {
  // The client went away: nobody got an error, so none is logged as one.
  if (signal.aborted) return log.info({ ...line, reason: 'client_gone' }, 'mcp');
  const wire = toWireError(e);
  const reason = (wire.data as { reason?: unknown } | undefined)?.reason;
  const expected = e instanceof GatewayError || carriesWireCode(e);
  const why = causeOf(e);
  if (why.cause !== undefined) why.cause = hide(why.cause);
  if (expected) log.info({ ...line, code: wire.code, ...(reason !== undefined ? { reason } : {}), error: clip(hide(wire.message)), ...why }, 'mcp');
  else log.warn({ ...line, code: wire.code, err: clip(hide((e as Error).message)), ...why }, 'mcp');
}

/** How many causes deep a line looks, and how long a message it keeps. */
const CAUSES = 4;
const MESSAGE_CHARS = 300;

/**
 * What lies under an error (`fetch failed` ← `connect ECONNREFUSED 127.0.0.1:8080`), as one string:
 * the line says why a backend failed, not only that it did. Messages only, never data or stacks.
 */
function causeOf(e: unknown): { cause?: string } {
  const messages: string[] = [];
  let at = (e as { cause?: unknown } | null)?.cause;
  for (let i = 0; i < CAUSES && at instanceof Error; i++) {
    // A wrapper that repeats its cause's words (a start failure around its spawn error) says them once.
    const message = at.message;
    if (!messages.some((m) => m.includes(message))) messages.push(message);
    at = (at as { cause?: unknown }).cause;
  }
  return messages.length ? { cause: clip(messages.join(': ')) } : {};
}

function clip(message: string): string {
  return message.length > MESSAGE_CHARS ? `${message.slice(0, MESSAGE_CHARS)}…` : message;
}

function nameOf(params: Record<string, unknown>): string | undefined {
  const v = params['name'] ?? (typeof params['uri'] === 'string' ? uriForLog(params['uri']) : undefined);
  return typeof v === 'string' ? v.slice(0, 200) : undefined;
}
