/**
 * The legacy route's fulfilment loop: a request whose answer is `input_required` is carried on inside
 * the same legacy request. Each input request goes to the client as a real `elicitation/create`,
 * `sampling/createMessage` or `roots/list` on the request's stream, and the request is retried with the
 * answers and the requestState until it completes, so the client never sees the 2026-07-28 vocabulary.
 *
 * Ours rather than the SDK server's legacy shim (`inputRequired.legacyShim`), because the gateway knows
 * what the shim cannot: the parked backend call behind the round. So:
 * - a request the backend withdraws (its own timeout, or it went on without it) is cancelled at the
 *   client (`notifications/cancelled`), and the round goes on with the others;
 * - a client's error for one request goes to the backend's request as that error, as it would without
 *   the gateway, instead of failing the whole call;
 * - the call's progress and log lines keep flowing while the client answers;
 * - a client that goes away cancels the backend call at once, not when its requestState expires.
 * A 2026-07-28 backend's own rounds (stateless: nothing parked here) are fulfilled the same way, with
 * a failed request failing the call as the shim does (tools/call → `isError`, others → error).
 */
import { missingCapabilityFor, type InputCapabilities } from '../../core/input-capabilities.js';
import { GatewayError, ProtocolError, WireCode, bareMessage } from '../../errors.js';
import { abortReason, linkedController, sleep } from '../../util/abort.js';
import { WITHDRAWN, type ParkedRound } from '../mrtr/parked-round.js';

/** Input rounds one legacy request may take: a backend that keeps asking past this is failing, not asking. */
export const MAX_ROUNDS = 64;
/**
 * Rounds that ask for nothing but a retry (requestState only: a stateless backend still working) are
 * retried after a pause that grows to 1 s, at most this many in a row (about 10 minutes).
 */
export const MAX_STATE_ONLY_ROUNDS = 600;
const STATE_ONLY_PAUSE_MS = [100, 200, 500, 1_000] as const;

export interface FulfilDeps {
  /** The request's method (decides how a failure surfaces). */
  readonly method: string;
  /** Runs one round of the request with these params; `parked` hears of a backend call it parks. */
  round(params: Record<string, unknown>, parked: (round: ParkedRound) => void): Promise<Record<string, unknown>>;
  /** Sends one input request to the client; rejects with the client's error, or when `signal` aborts. */
  send(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>;
  /** What the client declared it can be asked. */
  readonly caps: InputCapabilities;
  /** The legacy request's own signal: the client cancelled it, or its session ended. */
  readonly signal: AbortSignal;
}

/** Runs the request to its end; the result never has `resultType: "input_required"`. */
export async function fulfil(params: Record<string, unknown>, deps: FulfilDeps): Promise<Record<string, unknown>> {
  let parked: ParkedRound | undefined;
  const onParked = (round: ParkedRound): void => void (parked = round);
  let result = await deps.round(params, onParked);
  let rounds = 0;
  let stateOnly = 0;
  while (result['resultType'] === 'input_required') {
    const current = parked;
    parked = undefined;
    const asks = Object.keys((result['inputRequests'] ?? {}) as object).length > 0;
    rounds += asks ? 1 : 0;
    stateOnly = asks ? 0 : stateOnly + 1;
    if (rounds > MAX_ROUNDS || stateOnly > MAX_STATE_ONLY_ROUNDS) {
      current?.cancel(new GatewayError('cancelled', 'too many input rounds'));
      const what =
        rounds > MAX_ROUNDS ? `asked for input more than ${MAX_ROUNDS} times` : `asked to be retried more than ${MAX_STATE_ONLY_ROUNDS} times in a row`;
      return failure(deps.method, `${deps.method} ${what}; the gateway gave up`);
    }
    let answers: Record<string, Record<string, unknown>>;
    try {
      const outcome = await fulfilRound(result, current, deps, stateOnly);
      if (!outcome.ok) {
        current?.cancel(new GatewayError('cancelled', outcome.message));
        return failure(deps.method, outcome.message);
      }
      answers = outcome.answers;
    } catch (e) {
      current?.cancel(new GatewayError('cancelled', 'the client went away'));
      throw e;
    }
    // A call that ended meanwhile (it went on without the answers, failed or was given up) is answered
    // as it ended; its requestState continues nothing any more.
    const ended = current?.ended();
    if (ended) {
      result = await ended;
      continue;
    }
    const next: Record<string, unknown> = { ...params, inputResponses: answers };
    if (typeof result['requestState'] === 'string') next['requestState'] = result['requestState'];
    result = await deps.round(next, onParked);
  }
  return result;
}

type RoundOutcome = { ok: true; answers: Record<string, Record<string, unknown>> } | { ok: false; message: string };

async function fulfilRound(result: Record<string, unknown>, parked: ParkedRound | undefined, deps: FulfilDeps, stateOnly: number): Promise<RoundOutcome> {
  const requests = Object.entries((result['inputRequests'] ?? {}) as Record<string, { method?: unknown; params?: unknown }>);
  if (requests.length === 0) {
    await sleep(STATE_ONLY_PAUSE_MS[Math.min(stateOnly, STATE_ONLY_PAUSE_MS.length) - 1]!, deps.signal);
    return { ok: true, answers: {} };
  }
  for (const [key, r] of requests) {
    const params = (r.params ?? {}) as Record<string, unknown>;
    if (typeof r.method !== 'string') return { ok: false, message: `The backend's input request '${key}' has no method` };
    if (missingCapabilityFor(r.method, params, deps.caps))
      return { ok: false, message: `Cannot request input '${key}' (${r.method}): the client did not declare the capability it needs` };
  }
  const legs = new Map(requests.map(([key]) => [key, linkedController(deps.signal)]));
  const watching = new AbortController();
  const watch = parked?.watch((key) => legs.get(key)?.controller.abort(WITHDRAWN), watching.signal);
  try {
    const settled = await Promise.allSettled(
      requests.map(([key, r]) => deps.send(r.method as string, (r.params ?? {}) as Record<string, unknown>, legs.get(key)!.controller.signal)),
    );
    if (deps.signal.aborted) throw abortReason(deps.signal);
    const answers: Record<string, Record<string, unknown>> = {};
    for (const [i, outcome] of settled.entries()) {
      const [key, r] = requests[i]!;
      if (outcome.status === 'fulfilled') {
        answers[key] = outcome.value;
        continue;
      }
      if (legs.get(key)!.controller.signal.reason === WITHDRAWN) continue;
      const { code, message, data } = clientError(outcome.reason);
      // A parked call's backend gets the client's error on its own request, and goes on.
      if (parked?.refuse(key, code, message, data)) continue;
      if (parked) continue; // it stopped waiting meanwhile
      return { ok: false, message: `Fulfilling input required by '${deps.method}' failed: ${String(r.method)}: ${message}` };
    }
    return { ok: true, answers };
  } finally {
    watching.abort();
    await watch;
    for (const leg of legs.values()) leg.dispose();
  }
}

/** A client's answer that was an error, as a JSON-RPC error to pass on. */
function clientError(e: unknown): { code: number; message: string; data?: unknown } {
  const { code, message, data } = (e ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  const text = bareMessage(String(message ?? e));
  return { code: typeof code === 'number' && Number.isInteger(code) ? code : WireCode.InternalError, message: text, ...(data !== undefined ? { data } : {}) };
}

/** How a request that could not be carried on ends for a legacy client: tools/call → `isError`, others → error. */
function failure(method: string, message: string): Record<string, unknown> {
  if (method === 'tools/call') return { content: [{ type: 'text', text: message }], isError: true };
  throw new ProtocolError(WireCode.InternalError, message);
}
