/**
 * One backend call served over Multi Round-Trip Requests (2026-07-28 basic/patterns/mrtr.mdx).
 *
 * The backend call keeps running on its backend session while the front answers `input_required`.
 * Backend requests (elicitation/sampling/roots) become pending inputs with stable keys; inputs that
 * arrive within `coalesceMs` of each other go out in one round. A retry hands answers to the pending
 * backend requests and waits for the next outcome: another round, the result, or an error.
 * A run never sends an input request the current round's capabilities do not cover: the backend
 * request gets an error and the front gets -32021 naming what is missing.
 */
import { ProtocolError, WireCode, GatewayError } from '../../errors.js';
import { type InputCapabilities, missingCapabilityFor } from '../capabilities.js';
import { createDeferred, type Deferred } from '../../util/deferred.js';
import { sleep, abortReason } from '../../util/abort.js';
import { type Result, ok, err } from '../../util/result.js';
import { INPUT_KEY_META, InputKeyMinter } from './input-keys.js';
import { type InputResponseMap, checkResponseFor } from './input-responses.js';

export interface FrontNotification {
  method: string;
  params: Record<string, unknown>;
}
export type NotificationSink = (n: FrontNotification) => void;

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export function isLogLevel(v: unknown): v is LogLevel {
  return typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v);
}

/** What the current front request (round) declared. */
export interface RoundContext {
  caps: InputCapabilities;
  progressToken?: string | number;
  logLevel?: LogLevel;
  sink?: NotificationSink;
}

/** A bare input request as it goes into `inputRequests`. */
export interface InputRequestEntry {
  method: string;
  params: Record<string, unknown>;
}

export type CallOutcome =
  | { kind: 'input'; inputRequests: Record<string, InputRequestEntry>; round: number }
  | { kind: 'result'; result: Record<string, unknown> }
  | { kind: 'error'; error: unknown };

export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** A progress notification's fields as a ProgressUpdate (absent optionals stay absent). */
export function toProgressUpdate(p: { progress: number; total?: number | undefined; message?: string | undefined }): ProgressUpdate {
  const u: ProgressUpdate = { progress: p.progress };
  if (p.total !== undefined) u.total = p.total;
  if (p.message !== undefined) u.message = p.message;
  return u;
}

/** Runs the backend call. Must honour `signal` (cancel the backend request) and report progress. */
export type BackendExecutor = (hooks: { signal: AbortSignal; onprogress: (p: ProgressUpdate) => void }) => Promise<Record<string, unknown>>;

interface PendingInput {
  readonly key: string;
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly answer: Deferred<Record<string, unknown>>;
}

export interface CallRunOptions {
  readonly id: string;
  readonly principal: string;
  readonly method: string;
  readonly coalesceMs: number;
}

/** A backend error to send back for a backend request the gateway will not relay. */
export class BackendRequestRefused extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export class CallRun {
  readonly id: string;
  readonly principal: string;
  readonly method: string;
  readonly #coalesceMs: number;
  readonly #abort = new AbortController();
  readonly #keys = new InputKeyMinter();
  readonly #pending = new Map<string, PendingInput>();
  readonly #prefill = new Map<string, Record<string, unknown>>();
  readonly #doneCallbacks: (() => void)[] = [];
  #ctx: RoundContext = { caps: {} };
  #final: Extract<CallOutcome, { kind: 'result' | 'error' }> | undefined;
  #changed = createDeferred<void>();
  #lastInputAt = 0;
  #round = 0;
  #awaited = false;
  #started = false;

  constructor(options: CallRunOptions) {
    this.id = options.id;
    this.principal = options.principal;
    this.method = options.method;
    this.#coalesceMs = options.coalesceMs;
  }

  /** Rounds answered so far with `input_required`. */
  get round(): number {
    return this.#round;
  }
  get done(): boolean {
    return this.#final !== undefined;
  }
  /** True while a front request is waiting on this run. */
  get awaited(): boolean {
    return this.#awaited;
  }
  /** The abort signal of the backend call. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Registers a callback for when the run ends (result, error or cancel). Runs at most once. */
  onDone(cb: () => void): void {
    if (this.#final) cb();
    else this.#doneCallbacks.push(cb);
  }

  /**
   * Starts the backend call for the first round. `prefill` holds responses a fresh request already
   * carried (answered as soon as the backend asks under that key).
   */
  start(exec: BackendExecutor, ctx: RoundContext, prefill?: InputResponseMap): void {
    if (this.#started) throw new Error('CallRun.start called twice');
    this.#started = true;
    this.#ctx = ctx;
    this.#awaited = true;
    for (const [k, v] of Object.entries(prefill ?? {})) this.#prefill.set(k, v);
    let promise: Promise<Record<string, unknown>>;
    try {
      promise = exec({ signal: this.#abort.signal, onprogress: (p) => this.#onProgress(p) });
    } catch (e) {
      promise = Promise.reject(e);
    }
    promise.then(
      (result) => this.#finish({ kind: 'result', result }),
      (error: unknown) => this.#finish({ kind: 'error', error }),
    );
  }

  /** Checks a retry's responses for the keys this run is waiting on, without touching the run. */
  checkAnswers(responses: InputResponseMap | undefined): Result<void, string> {
    for (const [key, value] of Object.entries(responses ?? {})) {
      const p = this.#pending.get(key);
      if (p && !checkResponseFor(p.method, p.params, value)) {
        return err(`inputResponses.${key} is not a valid ${p.method} result`);
      }
    }
    return ok(undefined);
  }

  /** Attaches a retry: answers the pending inputs it covers (others stay pending). Call `checkAnswers` first. */
  resume(ctx: RoundContext, responses: InputResponseMap | undefined): void {
    this.#ctx = ctx;
    this.#awaited = true;
    for (const [key, value] of Object.entries(responses ?? {})) {
      const p = this.#pending.get(key);
      if (!p) continue; // keys we did not ask for are ignored
      this.#pending.delete(key);
      p.answer.resolve(value);
    }
    this.#signalChange();
  }

  /** Detaches the front request of the current round (its notifications stop). */
  detach(): void {
    this.#awaited = false;
    const { sink: _sink, ...rest } = this.#ctx;
    this.#ctx = rest;
  }

  /**
   * Called by the backend session when the backend sends elicitation/sampling/roots for this call.
   * Resolves with the client's answer. Throws `BackendRequestRefused` when the request cannot be relayed.
   */
  requestInput(method: string, rawParams: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (this.#final) return Promise.reject(new BackendRequestRefused(WireCode.InternalError, 'The originating request has ended'));
    const params = forwardableParams(method, rawParams ?? {});
    const missing = missingCapabilityFor(method, params, this.#ctx.caps);
    if (missing) {
      this.#finish({
        kind: 'error',
        error: new ProtocolError(WireCode.MissingRequiredClientCapability, `Missing required client capability for ${method}`, {
          requiredCapabilities: missing,
        }),
      });
      return Promise.reject(new BackendRequestRefused(WireCode.InvalidRequest, `The client did not declare the capability needed for ${method}`));
    }
    const hint = (rawParams?.['_meta'] as Record<string, unknown> | undefined)?.[INPUT_KEY_META];
    const key = this.#keys.next(method, hint);
    const pre = this.#prefill.get(key);
    if (pre !== undefined) {
      this.#prefill.delete(key);
      if (checkResponseFor(method, params, pre)) return Promise.resolve(pre);
    }
    const pending: PendingInput = { key, method, params, answer: createDeferred() };
    this.#pending.set(key, pending);
    this.#lastInputAt = Date.now();
    const onAbort = (): void => {
      if (this.#pending.get(key) === pending) {
        this.#pending.delete(key);
        this.#signalChange();
      }
      pending.answer.reject(abortReason(signal));
    };
    if (signal.aborted) onAbort();
    else {
      signal.addEventListener('abort', onAbort, { once: true });
      pending.answer.promise.then(
        () => signal.removeEventListener('abort', onAbort),
        () => signal.removeEventListener('abort', onAbort),
      );
    }
    this.#signalChange();
    return pending.answer.promise;
  }

  /** A `notifications/message` the backend sent for this call. */
  deliverLog(params: Record<string, unknown>): void {
    const { logLevel, sink } = this.#ctx;
    if (!sink || !logLevel || !isLogLevel(params['level'])) return;
    if (LOG_LEVELS.indexOf(params['level']) < LOG_LEVELS.indexOf(logLevel)) return;
    const { _meta: _drop, ...rest } = params;
    sink({ method: 'notifications/message', params: rest });
  }

  /**
   * Waits for the next thing the front must answer with: an input round (after the coalescing
   * window), the result, or an error. Rejects when `signal` aborts (the caller then cancels).
   */
  async nextOutcome(signal: AbortSignal): Promise<CallOutcome> {
    for (;;) {
      if (signal.aborted) throw abortReason(signal);
      if (this.#final) {
        this.#awaited = false;
        return this.#final;
      }
      const changed = this.#changed.promise;
      if (this.#pending.size > 0) {
        const quietFor = Date.now() - this.#lastInputAt;
        if (quietFor >= this.#coalesceMs) {
          this.#round += 1;
          this.detach();
          const inputRequests: Record<string, InputRequestEntry> = {};
          for (const p of this.#pending.values()) inputRequests[p.key] = { method: p.method, params: p.params };
          return { kind: 'input', inputRequests, round: this.#round };
        }
        const timer = new AbortController();
        try {
          await Promise.race([changed, sleep(this.#coalesceMs - quietFor, AbortSignal.any([signal, timer.signal]))]);
        } finally {
          timer.abort();
        }
        continue;
      }
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(abortReason(signal));
        signal.addEventListener('abort', onAbort, { once: true });
        void changed.then(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    }
  }

  /** Cancels the backend call and fails every pending input. Idempotent. */
  cancel(reason: unknown = new GatewayError('cancelled')): void {
    this.#finish({ kind: 'error', error: reason });
  }

  #onProgress(p: ProgressUpdate): void {
    const { progressToken, sink } = this.#ctx;
    if (progressToken === undefined || !sink) return;
    const params: Record<string, unknown> = { progressToken, progress: p.progress };
    if (p.total !== undefined) params['total'] = p.total;
    if (p.message !== undefined) params['message'] = p.message;
    sink({ method: 'notifications/progress', params });
  }

  #finish(outcome: Extract<CallOutcome, { kind: 'result' | 'error' }>): void {
    if (this.#final) return;
    this.#final = outcome;
    if (!this.#abort.signal.aborted) this.#abort.abort(outcome.kind === 'error' ? outcome.error : new Error('finished'));
    for (const p of this.#pending.values()) p.answer.reject(new BackendRequestRefused(WireCode.InternalError, 'The originating request has ended'));
    this.#pending.clear();
    this.#prefill.clear();
    this.#signalChange();
    for (const cb of this.#doneCallbacks.splice(0)) {
      try {
        cb();
      } catch {
        // a done-callback must not break the others
      }
    }
  }

  #signalChange(): void {
    const old = this.#changed;
    this.#changed = createDeferred<void>();
    old.resolve();
  }
}

/**
 * The request as it goes into `inputRequests`: bare `{method, params}`; drops the gateway's key hint,
 * legacy `task` params and (2026-07-28 has none) `elicitationId`.
 */
function forwardableParams(method: string, raw: Record<string, unknown>): Record<string, unknown> {
  const { _meta, task: _task, ...rest } = raw;
  if (method === 'elicitation/create') delete rest['elicitationId'];
  if (_meta && typeof _meta === 'object') {
    const { [INPUT_KEY_META]: _hint, ...metaRest } = _meta as Record<string, unknown>;
    delete metaRest['progressToken'];
    if (Object.keys(metaRest).length > 0) rest['_meta'] = metaRest;
  }
  return rest;
}
