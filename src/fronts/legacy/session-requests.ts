/**
 * A legacy session's client requests, from their arrival to their answer going out. Counted per session
 * (a session with a request in flight is never closed to make room, session-bounds.ts) and over every
 * session of the front (a drain waits for them), and logged once answered: one line per exchange
 * (method, name, time, error code; never arguments or results), as the HTTP layer logs 2026-07-28
 * requests.
 *
 * A request ends when its answer has been sent, not when its handler returns, so a drain cannot close
 * the session between a call's end and its answer; or when the client cancels it
 * (`notifications/cancelled`), since the SDK server sends no answer to a cancelled request.
 *
 * The session's server sees its transport through `CountedTransport`, a decorator: the transport's own
 * methods are left as they are, and its callbacks are set as any user of a transport sets them.
 */
import { readableParamsError } from './params-error.js';
import { uriForLog, uriHider } from '../../util/uri-for-log.js';
import type { JSONRPCMessage, MessageExtraInfo, RequestId, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import type { Logger } from '../../log.js';

/*
 * A message's kind by its keys. Every message seen here was checked already (the SDK transport parsed
 * what came in; what goes out is built by the SDK server or ./direct-call.ts): the SDK's own guards
 * (`isJSONRPCRequest`, …) check it again with zod, which at every message was a few percent of the
 * legacy route's CPU.
 */
type Loose = Partial<Record<'id' | 'method' | 'result' | 'error' | 'params', unknown>>;
const isRequest = (m: Loose): boolean => typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number');
const isNotification = (m: Loose): boolean => typeof m.method === 'string' && m.id === undefined;
/** The id a message answers (a result, or an error with an id), or undefined. */
function answeredId(m: Loose): RequestId | undefined {
  if (m.method !== undefined || (m.result === undefined && m.error === undefined)) return undefined;
  return typeof m.id === 'string' || typeof m.id === 'number' ? m.id : undefined;
}
/** An error answer's code (an integer, as the transport's parse left it), or -32603 for one without. */
function errorCode(m: Loose): number {
  const code = (m.error as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : -32603;
}

/** A result's type as the line gives it (`complete` for a legacy result, which has none). */
function resultTypeOf(m: Loose): string {
  const type = (m.result as { resultType?: unknown } | undefined)?.resultType;
  return typeof type === 'string' ? type : 'complete';
}

/** An error answer as the line gives it: its code, its reason when it has one, its message (clipped). */
function errorOutcome(m: Loose): Record<string, unknown> {
  const error = m.error as { message?: unknown; data?: { reason?: unknown } } | undefined;
  const reason = error?.data?.reason;
  const message = typeof error?.message === 'string' ? error.message.slice(0, 300) : undefined;
  return { code: errorCode(m), ...(typeof reason === 'string' ? { reason } : {}), ...(message !== undefined ? { error: message } : {}) };
}

/** Why a request served beside the SDK server is cancelled when its session's transport closes (its client did not cancel it). */
export const SESSION_ENDED = 'the session ended';

/** Requests in flight over many sessions: each session's `SessionRequests` adds and removes its own. */
export class RequestTally {
  #count = 0;

  get count(): number {
    return this.#count;
  }

  change(delta: number): void {
    this.#count += delta;
  }
}

interface InFlight {
  readonly method: string;
  readonly name: string | undefined;
  readonly started: number;
  /** Ends a request served beside the SDK server (./direct-call.ts), which does not hear of its cancellation. */
  readonly cancel: ((why: string) => void) | undefined;
  /** Hides the query values of the URI it reads in an error that quotes it (util/uri-for-log.ts). */
  readonly hide: ((text: string) => string) | undefined;
  /** Served through the front's `observe` (which counts it): set when its serving starts. */
  observed: boolean;
  /** The trace and span ids of its server span (tracing on): its line carries them, as a line written inside the span would. */
  trace: { readonly traceId?: string; readonly spanId?: string } | undefined;
}

/**
 * Counts a request the front's `observe` did not see (`initialize`, `ping`, `logging/setLevel`, a
 * subscription, a method no backend offers), as `observe` counts the others: its method, its outcome
 * (a result type, or the error's reason or code name), its time in seconds.
 */
export type CountRequest = (method: string, outcome: RequestOutcome, seconds: number) => void;
/** How a request ended: its result, or its error (as the wire carried it). */
export type RequestOutcome = { readonly result?: unknown; readonly error?: unknown };
/** `CountRequest` for any session: the session's principal last. */
export type CountRequestOf = (method: string, outcome: RequestOutcome, seconds: number, principal: string) => void;

/** The requests in flight of one session: its own key set, counted in `tally` too. */
export class SessionRequests {
  readonly #inFlight = new Map<RequestId, InFlight>();
  readonly #tally: RequestTally;
  readonly #log: Logger;
  readonly #count: CountRequest | undefined;

  constructor(tally: RequestTally, log: Logger, count?: CountRequest) {
    this.#tally = tally;
    this.#log = log;
    this.#count = count;
  }

  /** Requests received and not answered (nor cancelled) yet. */
  get size(): number {
    return this.#inFlight.size;
  }

  /**
   * A message from the client: a request starts; a cancellation ends the request it names. `cancel`
   * (a request served beside the SDK server) runs when the client cancels it or the transport closes.
   */
  received(message: JSONRPCMessage, cancel?: (why: string) => void): void {
    const m = message as Loose;
    if (isRequest(m)) {
      const id = m.id as RequestId;
      const params = m.params as { name?: unknown; uri?: unknown } | undefined;
      const name = params?.name ?? (typeof params?.uri === 'string' ? uriForLog(params.uri) : undefined);
      // A client that reuses an id has given up on the first request: one served beside the SDK server is cancelled.
      const earlier = this.#inFlight.get(id)?.cancel;
      this.#end(id);
      earlier?.('the client sent another request with its id');
      const started = performance.now();
      const hide = uriHider(params?.uri);
      this.#inFlight.set(id, {
        method: m.method as string,
        name: typeof name === 'string' ? name.slice(0, 200) : undefined,
        started,
        cancel,
        hide,
        observed: false,
        trace: undefined,
      });
      this.#tally.change(1);
    } else if (isNotification(m) && m.method === 'notifications/cancelled') {
      const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof id === 'string' || typeof id === 'number') {
        const cancel = this.#inFlight.get(id)?.cancel;
        this.#end(id, { cancelled: true });
        cancel?.('the client cancelled the request');
      }
    }
  }

  /**
   * A message to the client: an answer ends its request. With `cancel`, only the request received
   * with that hook (a later request that reused its id is another request).
   */
  sent(message: JSONRPCMessage, cancel?: (why: string) => void): void {
    const m = message as Loose;
    const id = answeredId(m);
    const req = id === undefined ? undefined : this.#inFlight.get(id);
    // An answer ends the request it answers: not a later one that reused its id (served the other way).
    if (id === undefined || req?.cancel !== cancel) return;
    if (this.#count && req && !req.observed)
      this.#count(req.method, m.error !== undefined ? { error: m.error } : { result: m.result }, (performance.now() - req.started) / 1000);
    this.#end(id, m.error !== undefined ? errorOutcome(m) : { resultType: resultTypeOf(m) });
  }

  /**
   * Request `id` is being served through the front's `observe`, which counts it; `trace` (tracing on)
   * is its server span's ids: its line will carry them.
   */
  observed(id: RequestId, trace?: { readonly traceId?: string; readonly spanId?: string }): void {
    const req = this.#inFlight.get(id);
    if (!req) return;
    req.observed = true;
    req.trace = trace;
  }

  /**
   * The session is about to end (its client DELETEs it): every request served beside the SDK server is
   * cancelled as when its session ends, and stays in flight until its answer (an error) goes out.
   */
  endAll(): void {
    for (const req of [...this.#inFlight.values()]) req.cancel?.(SESSION_ENDED);
  }

  /** The requests in flight that the SDK server serves (not beside it: they have no cancel hook). */
  servedBySdk(): RequestId[] {
    const ids: RequestId[] = [];
    for (const [id, req] of this.#inFlight) if (!req.cancel) ids.push(id);
    return ids;
  }

  /** The transport closed: nothing of it is in flight any more (its answers can no longer go out). */
  clear(): void {
    const cancels = [...this.#inFlight.values()].map((r) => r.cancel);
    this.#tally.change(-this.#inFlight.size);
    this.#inFlight.clear();
    for (const cancel of cancels) cancel?.(SESSION_ENDED);
  }

  /** Ends request `id`, and logs the exchange when `outcome` is given. */
  #end(id: RequestId, outcome?: Record<string, unknown>): void {
    const req = this.#inFlight.get(id);
    if (!req) return;
    this.#inFlight.delete(id);
    this.#tally.change(-1);
    if (!outcome) return;
    // An error message may quote the URI read: its query values are not logged.
    const error = outcome['error'];
    if (typeof error === 'string' && req.hide) outcome['error'] = req.hide(error);
    this.#log.info({ method: req.method, name: req.name, ms: Math.round(performance.now() - req.started), ...outcome, ...req.trace }, 'mcp');
  }
}

/** `inner` as a session's server sees it: every message through it is shown to `requests`. */
export class CountedTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined;
  readonly #inner: Transport;
  readonly #requests: SessionRequests;

  constructor(inner: Transport, requests: SessionRequests) {
    this.#inner = inner;
    this.#requests = requests;
    inner.onmessage = (message, extra) => {
      requests.received(message);
      this.onmessage?.(message, extra);
    };
    inner.onclose = () => {
      requests.clear();
      this.onclose?.();
    };
    inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    try {
      await this.#inner.send(readableParamsError(message), options);
    } finally {
      this.#requests.sent(message);
    }
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  get hasPerRequestStream(): boolean {
    return this.#inner.hasPerRequestStream === true;
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version);
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.#inner.setSupportedProtocolVersions?.(versions);
  }
}
