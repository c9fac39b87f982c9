/**
 * One backend call with observable state: the unit every front works on (ARCHITECTURE.md).
 *
 * The backend call runs on its own; the call records what a front needs to see without consuming
 * anything: its status, the outstanding input requests under stable keys, the outcome once done, and
 * progress/log events in a bounded log with sequence numbers. Fronts read it and wait for changes
 * (`nextChange`); answers go in with `answer`. The call implements the backend's `CallChannel`: a
 * backend request for input becomes a pending input until a front answers it. A call never asks for
 * what the caller's capabilities do not cover: the backend request gets an error and the call fails
 * with -32021 naming what is missing.
 */
import { LoggingLevelSchema } from '@modelcontextprotocol/core';
import type { LoggingLevel } from '@modelcontextprotocol/server';
import { GatewayError, ProtocolError, WireCode } from '../../errors.js';
import { createDeferred, type Deferred } from '../../util/deferred.js';
import { abortReason, wakeOrAbort } from '../../util/abort.js';
import { type Result, ok, err } from '../../util/result.js';
import { type InputCapabilities, missingCapabilityFor } from '../input-capabilities.js';
import {
  BackendRequestRefused,
  CALL_ENDED,
  ClientRefusal,
  type ActivityLook,
  type BackendActivity,
  type BackendOutcome,
  type CallChannel,
  type CancelSource,
  type InputCancel,
  type ProgressUpdate,
  type RelayedCall,
  type WaveExpectation,
} from '../backend/port.js';
import { Lifeline, abortSignalOf } from '../../util/lifeline.js';
import { EventLog } from './event-log.js';
import { InputTimedOut, type SamplingGate } from './sampling-gate.js';
import { askKey, type AskPatterns } from './ask-patterns.js';
import { INPUT_KEY_META, InputKeyMinter } from './input-keys.js';
import { type InputResponseMap, checkResponseFor, responseProblem } from './input-responses.js';

export type CallStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** An outstanding input request, as it goes into `inputRequests` under its key. */
export interface PendingInput {
  readonly key: string;
  readonly method: string;
  readonly params: Record<string, unknown>;
}

export type CallEvent =
  | { kind: 'progress'; progress: ProgressUpdate }
  | { kind: 'log'; level: LoggingLevel; params: Record<string, unknown> }
  | { kind: 'notification'; method: string; params: Record<string, unknown> };

/**
 * What became of an input request that is no longer pending: answered or refused by the client; refused
 * by the gateway for want of a client that can answer it (`not_relayed`); the backend withdrew it;
 * nobody answered it in time (a sampling request past the sampling gate's `timeoutMs`); the backend's
 * connection closed under it (`lost`: a backend that crashed, restarted or was removed); or the call
 * ended while it waited.
 */
export type InputFate = 'answered' | 'refused' | 'not_relayed' | 'withdrawn' | 'timed_out' | 'lost' | 'ended';

/** How a call ended: the backend's outcome, or an error (a wire error, a GatewayError, a cancel). */
export type CallOutcome = { kind: 'done'; outcome: BackendOutcome } | { kind: 'error'; error: unknown };

export interface CallInit {
  readonly id: string;
  readonly principal: string;
  readonly method: string;
  /** The backend that serves the call. */
  readonly backend: string;
  readonly caps: InputCapabilities;
  /** Answers the caller already gave (a fresh request carrying `inputResponses`). */
  readonly prefill?: InputResponseMap | undefined;
  /** Bound of the event log. */
  readonly maxEvents?: number;
  /**
   * The limits its sampling requests go through (its caller's scope's), asked for at its first sampling
   * request: a scope whose calls never sample keeps no gate.
   */
  readonly sampling?: (() => SamplingGate) | undefined;
  /** Where what its operation does when it asks is learned (ask-patterns.ts), and the operation; none: nothing learned. */
  readonly askPatterns?: AskPatterns | undefined;
  readonly operation?: string | undefined;
}

interface Pending extends PendingInput {
  readonly answer: Deferred<Record<string, unknown>>;
  /** What ends the backend's request and the call's listener on it, taken off once it is settled. */
  readonly signal: CancelSource;
  readonly onAbort: () => void;
}

/** The abort reason of a call that finished normally: one shared instance (an Error per call costs a stack trace). */
const FINISHED = Object.freeze(new Error('finished'));

export class Call implements CallChannel {
  readonly id: string;
  readonly principal: string;
  readonly method: string;
  readonly backend: string;
  readonly createdAt = Date.now();
  /** The call's end as its backend listens to it (util/lifeline.ts), and as an AbortSignal when asked for. */
  readonly #life = new Lifeline();
  // What only a call that asks for input or sends events needs is made when it first does: most calls
  // end in one exchange (a pass-through call) and never touch it.
  #keys: InputKeyMinter | undefined;
  #pending: Map<string, Pending> | undefined;
  #prefill: Map<string, Record<string, unknown>> | undefined;
  #fates: Map<string, InputFate> | undefined;
  #events: EventLog<CallEvent> | undefined;
  readonly #maxEvents: number;
  // Made when first needed, each at its size: a parked call holds them (issue 30).
  #waiters: Set<() => void> | undefined;
  #doneCallbacks: (() => void)[] | undefined;
  #caps: InputCapabilities;
  #outcome: CallOutcome | undefined;
  #status: CallStatus = 'working';
  #updatedAt = this.createdAt;
  #lastInputAt = 0;
  /** When the call began to wait for its client's answers (set while its status is `input_required`). */
  #waitingSince: number | undefined;
  #inputsAsked = 0;
  /** Its elicitation and sampling requests so far, answered in advance or not. */
  #asked = 0;
  /**
   * Its current wave of elicitation and sampling requests (one made while another is unanswered joins
   * it, any other starts the next; -1: none yet), and the most of its requests unanswered at once.
   */
  #wave = -1;
  #wavePeak = 0;
  /** Built with answers to use before asking (a fresh request carrying `inputResponses`): what it asks is not how its operation asks. */
  readonly #prefilled: boolean;
  #withdrawn = 0;
  #backendActivity: ActivityLook | undefined;
  readonly #sampling: (() => SamplingGate) | undefined;
  readonly #askPatterns: AskPatterns | undefined;
  readonly #operation: string | undefined;
  /** Its operation's key in `#askPatterns`, made when first needed (a call that never asks never needs it). */
  #askKey: string | undefined;
  /** The call whose requests this one relays (a proxy tool's backend call), if any. */
  #relayed: RelayedCall | undefined;

  constructor(init: CallInit) {
    this.#sampling = init.sampling;
    // Learned only under an operation: none, nothing learned.
    this.#askPatterns = init.operation === undefined ? undefined : init.askPatterns;
    this.#operation = init.operation;
    this.id = init.id;
    this.principal = init.principal;
    this.method = init.method;
    this.backend = init.backend;
    this.#caps = init.caps;
    this.#maxEvents = init.maxEvents ?? 256;
    for (const [k, v] of Object.entries(init.prefill ?? {})) (this.#prefill ??= new Map()).set(k, v);
    this.#prefilled = this.#prefill !== undefined;
  }

  get status(): CallStatus {
    return this.#status;
  }
  get done(): boolean {
    return this.#outcome !== undefined;
  }
  /** How the call ended, once done. */
  get outcome(): CallOutcome | undefined {
    return this.#outcome;
  }
  get updatedAt(): number {
    return this.#updatedAt;
  }
  /** When the newest pending input arrived (for coalescing rounds). */
  get lastInputAt(): number {
    return this.#lastInputAt;
  }
  /** How many input requests the backend has made so far (tells two requests in one millisecond apart). */
  get inputsAsked(): number {
    return this.#inputsAsked;
  }
  /**
   * Whether its operation has been seen making an input request while another was outstanding (in this
   * call or an earlier one: ask-patterns.ts), so that a round should wait for requests made together.
   */
  get asksTogether(): boolean {
    if (this.#relayed) return this.#relayed.asksTogether;
    return this.#askPatterns?.together(this.#key()) ?? false;
  }

  /**
   * While it waits for an answer, what its operation's calls had unanswered at once in this wave
   * (ask-patterns.ts): `more` than it has had (a round should wait for the rest, up to its bound), as
   * many (`met`), or `unknown` (not learned, not waiting, or a call that used answers given in advance).
   */
  get waveExpectation(): WaveExpectation {
    if (this.#relayed) return this.#relayed.waveExpectation;
    if (!this.#askPatterns || this.#prefilled || this.#wave < 0 || !this.#asking()) return 'unknown';
    const expected = this.#askPatterns.expected(this.#key(), this.#wave);
    return expected === 0 ? 'unknown' : expected > this.#wavePeak ? 'more' : 'met';
  }

  /** A round went out at its bound while it expected `more`: its operation does not always ask as many in this wave. */
  askedFewer(): void {
    if (this.#relayed) return this.#relayed.askedFewer();
    if (!this.#prefilled) this.#askPatterns?.noteFewer(this.#key(), this.#wave, this.#wavePeak);
  }

  /**
   * Whether its operation asks once (ask-patterns.ts `once`): its calls' first rounds went out with
   * one request again and again, the backend seen quiet, and none of its calls asked a second thing.
   */
  get asksOnce(): boolean {
    if (this.#relayed) return this.#relayed.asksOnce;
    return !this.#prefilled && (this.#askPatterns?.once(this.#key()) ?? false);
  }

  /**
   * A round went out with its one outstanding request, the backend seen quiet in every thread: counted
   * for its operation (ask-patterns.ts `noteOnce`) unless a request of it came before (`noteAgain`).
   */
  wentOutOnce(): void {
    if (this.#relayed) return this.#relayed.wentOutOnce();
    if (!this.#prefilled) this.#askPatterns?.noteOnce(this.#key());
  }

  relays(call: RelayedCall | undefined): void {
    this.#relayed = call;
  }

  #key(): string {
    return (this.#askKey ??= askKey(this.backend, this.method, this.#operation ?? ''));
  }
  /**
   * Whether the backend serving the call may still be sending (port.ts BackendActivity): what a stdio
   * session bound to this call alone can see; `unknown` otherwise.
   */
  get backendActivity(): BackendActivity {
    if (this.#relayed) return this.#relayed.backendActivity;
    // An operation that asks once: each process's main thread is enough to look at (whole every few looks).
    return this.#backendActivity?.(this.asksOnce ? 'main' : 'threads') ?? 'unknown';
  }
  /** Aborted when the call ends: the backend request is cancelled with it. Made when first asked for (a call that ended gives an aborted one). */
  get signal(): AbortSignal {
    return this.#life.signal;
  }
  /** Outstanding input requests, in the order the backend made them. */
  get pending(): PendingInput[] {
    if (!this.#pending?.size) return [];
    return [...this.#pending.values()].map(({ key, method, params }) => ({ key, method, params }));
  }
  /** Input requests the backend withdrew before they were answered (not those lost with its session). */
  get withdrawn(): number {
    return this.#withdrawn;
  }
  /** The sequence number of the newest event. */
  get lastEventSeq(): number {
    return this.#events?.lastSeq ?? 0;
  }

  /** What became of the input request `key` once it stopped being pending (undefined while it waits, or never was). */
  inputFate(key: string): InputFate | undefined {
    return this.#fates?.get(key);
  }

  /** Events after `since` (see EventLog). */
  events(since: number): ReturnType<EventLog<CallEvent>['since']> {
    return this.#events ? this.#events.since(since) : { events: [], missed: Math.max(0, -since) };
  }

  /** Resolves at the next change (input, event, end), or after `withinMs` when given; rejects when `signal` aborts. */
  nextChange(signal: CancelSource, withinMs?: number): Promise<void> {
    if (signal.aborted) return Promise.reject(abortReason(signal));
    const waiters = (this.#waiters ??= new Set());
    // No empty set is kept: a parked call's last round ends its wait this way (issue 30).
    const forget = (): void => {
      if (this.#waiters === waiters) this.#waiters = undefined;
    };
    return wakeOrAbort(waiters, signal, forget, withinMs);
  }

  /** Registers a callback for when the call ends. Runs at once when it has ended. */
  onDone(cb: () => void): void {
    if (this.#outcome) cb();
    else this.#doneCallbacks = this.#doneCallbacks ? this.#doneCallbacks.concat(cb) : [cb];
  }

  /** The capabilities the caller declared on its latest request (they bound what may be asked). */
  setCapabilities(caps: InputCapabilities): void {
    this.#caps = caps;
  }

  /**
   * Runs the backend call. `exec` must honour `life` (cancel the backend request when it ends; the
   * same end as `signal`, cheaper to listen to: util/lifeline.ts).
   */
  run(exec: (life: CancelSource) => Promise<BackendOutcome>): void {
    let promise: Promise<BackendOutcome>;
    try {
      promise = exec(this.#life);
    } catch (e) {
      promise = Promise.reject(e);
    }
    promise.then(
      (outcome) => this.#finish({ kind: 'done', outcome }, 'completed'),
      (error: unknown) => this.#finish({ kind: 'error', error }, 'failed'),
    );
  }

  /** Checks answers for the keys this call is waiting on, without touching the call. */
  checkAnswers(responses: InputResponseMap | undefined): Result<void, string> {
    for (const [key, value] of Object.entries(responses ?? {})) {
      const p = this.#pending?.get(key);
      const problem = p ? responseProblem(p.method, p.params, value) : undefined;
      if (problem) return err(`inputResponses.${key} is not a valid ${p!.method} result: ${problem}`);
    }
    return ok(undefined);
  }

  /** Answers the pending inputs `responses` covers (others stay pending; unknown keys are ignored). Returns the keys answered. */
  answer(responses: InputResponseMap | undefined): string[] {
    const answered: string[] = [];
    for (const [key, value] of Object.entries(responses ?? {})) {
      const p = this.#pending?.get(key);
      if (!p) continue;
      this.#pending!.delete(key);
      this.#fate(key, 'answered');
      this.#settle(p);
      p.answer.resolve(value);
      answered.push(key);
    }
    if (answered.length) {
      this.#waitingSince = undefined; // its client answered: what it waits for now, it waits for from now
      this.#changed();
    }
    return answered;
  }

  /**
   * Answers the pending input `key` with an error instead of a result (a legacy client refused the
   * request, or did not answer in time): the backend's request fails as it would have without the
   * gateway. False when the call no longer waits on `key`.
   */
  refuse(key: string, error: BackendRequestRefused): boolean {
    const p = this.#pending?.get(key);
    if (!p) return false;
    this.#pending!.delete(key);
    this.#fate(key, error instanceof ClientRefusal ? 'refused' : 'not_relayed');
    this.#settle(p);
    p.answer.reject(error);
    this.#waitingSince = undefined;
    this.#changed();
    return true;
  }

  /** Cancels the backend call and fails every pending input. Idempotent. */
  cancel(reason: unknown = new GatewayError('cancelled')): void {
    this.#finish({ kind: 'error', error: reason }, 'cancelled');
  }

  /** Since when the call has waited for its client's answer (status `input_required`), while it does. */
  waitingSince(): number | undefined {
    return this.#status === 'input_required' ? this.#waitingSince : undefined;
  }

  /**
   * Ends the call with `reason`: its backend session is needed for other work while it waits for its
   * client. It failed (a task reads `failed`, not `cancelled`: its requestor cancelled nothing).
   */
  reclaim(reason: unknown): void {
    this.#finish({ kind: 'error', error: reason }, 'failed');
  }

  // CallChannel

  requestInput(
    method: string,
    rawParams: Record<string, unknown>,
    signal: InputCancel,
    withdrawal?: (signal: CancelSource) => unknown,
  ): Promise<Record<string, unknown>> {
    if (method === 'sampling/createMessage' && this.#sampling && !this.#outcome) {
      return this.#sampling().run(abortSignalOf(signal), (limited) => this.#ask(method, rawParams, limited, withdrawal));
    }
    return this.#ask(method, rawParams, signal, withdrawal);
  }

  #ask(
    method: string,
    rawParams: Record<string, unknown>,
    signal: CancelSource,
    withdrawal: ((signal: CancelSource) => unknown) | undefined,
  ): Promise<Record<string, unknown>> {
    if (this.#outcome) return Promise.reject(new BackendRequestRefused(WireCode.InternalError, CALL_ENDED));
    const params = forwardableParams(method, rawParams);
    const missing = missingCapabilityFor(method, params, this.#caps);
    if (missing) {
      const error = new ProtocolError(WireCode.MissingRequiredClientCapability, `Missing required client capability for ${method}`, {
        requiredCapabilities: missing,
      });
      this.#finish({ kind: 'error', error }, 'failed');
      return Promise.reject(new BackendRequestRefused(WireCode.InvalidRequest, `The client did not declare the capability needed for ${method}`));
    }
    // A second thing asked (together with the first or after it, answered in advance or not): its operation does not ask once.
    if (method !== 'roots/list' && this.#asked++ > 0) this.#askPatterns?.noteAgain(this.#key());
    const hint = (rawParams['_meta'] as Record<string, unknown> | undefined)?.[INPUT_KEY_META];
    const key = (this.#keys ??= new InputKeyMinter()).next(method, hint);
    const pre = this.#prefill?.get(key);
    if (pre !== undefined) {
      this.#prefill!.delete(key);
      if (checkResponseFor(method, params, pre)) return Promise.resolve(pre);
    }
    // Its promise is returned below, to the backend's request, which handles its rejection.
    const pending: Pending = { key, method, params, answer: createDeferred(true), signal, onAbort: () => this.#withdraw(pending, withdrawal) };
    // Another request still outstanding: this operation asks for things together, this many so far in
    // this wave. roots/list does not count: a session's own (backend-session.ts) reaches whichever call binds to it next.
    if (method !== 'roots/list') this.#countAsk();
    (this.#pending ??= new Map()).set(key, pending);
    this.#lastInputAt = Date.now();
    this.#inputsAsked += 1;
    // The listener is taken off where the answer settles (#settle), not by a reaction to it: fewer objects per parked call.
    if (signal.aborted) pending.onAbort();
    else signal.addEventListener('abort', pending.onAbort, { once: true });
    this.#changed();
    return pending.answer.promise;
  }

  /**
   * An elicitation or sampling request is made (before it is added): it joins the wave of those still
   * outstanding, or starts the next. A new most at once is learned; requests answered one at a time
   * (a proxy tool's, a partial tasks/update) or withdrawn and asked again never add up.
   */
  #countAsk(): void {
    const outstanding = this.#outstanding();
    if (outstanding === 0) {
      this.#wave += 1;
      this.#wavePeak = 1;
      return;
    }
    if (outstanding + 1 <= this.#wavePeak) return;
    this.#wavePeak = outstanding + 1;
    // A call that used answers given in advance asked fewer than its operation does: only that it asks together is learned.
    this.#askPatterns?.noteTogether(this.#key(), this.#prefilled ? undefined : this.#wave, this.#wavePeak);
  }

  /** Whether an elicitation or sampling request of the call is outstanding. */
  #asking(): boolean {
    return this.#outstanding() > 0;
  }

  /** How many elicitation and sampling requests of the call are outstanding. */
  #outstanding(): number {
    let count = 0;
    for (const p of this.#pending?.values() ?? []) if (p.method !== 'roots/list') count += 1;
    return count;
  }

  /** The backend withdrew its own request (e.g. a v1 SDK server's 60 s elicitation timeout), or lost its session. */
  #withdraw(pending: Pending, withdrawal: ((signal: CancelSource) => unknown) | undefined): void {
    const { key, signal } = pending;
    const reason: unknown = withdrawal ? withdrawal(signal) : signal.reason;
    if (this.#pending?.get(key) === pending) {
      const fate = fateOfAbort(reason);
      // A request lost with its session is not one the backend withdrew: the call's end says what happened.
      if (fate !== 'lost') this.#withdrawn += 1;
      this.#pending.delete(key);
      this.#fate(key, fate);
      this.#changed();
    }
    pending.answer.reject(reason instanceof Error ? reason : abortReason(signal));
  }

  /** A pending input is settled (answered, refused, or ended with the call): its abort listener goes. */
  #settle(pending: Pending): void {
    pending.signal.removeEventListener('abort', pending.onAbort);
  }

  watchBackend(activity: ActivityLook | undefined): void {
    this.#backendActivity = activity;
  }

  progress(update: ProgressUpdate): void {
    if (this.#outcome) return;
    this.#log().push({ kind: 'progress', progress: update });
    this.#changed();
  }

  notification(method: string, params: Record<string, unknown>): void {
    if (this.#outcome) return;
    const { _meta: _drop, ...rest } = params;
    this.#log().push({ kind: 'notification', method, params: rest });
    this.#changed();
  }

  log(params: Record<string, unknown>): void {
    if (this.#outcome) return;
    const level = LoggingLevelSchema.safeParse(params['level']);
    if (!level.success) return;
    const { _meta: _drop, ...rest } = params;
    this.#log().push({ kind: 'log', level: level.data, params: rest });
    this.#changed();
  }

  #finish(outcome: CallOutcome, status: CallStatus): void {
    if (this.#outcome) return;
    this.#outcome = outcome;
    this.#status = status;
    this.#life.abort(outcome.kind === 'error' ? outcome.error : FINISHED);
    // A backend that answers while its own input requests are outstanding has stopped waiting for them
    // (its withdrawal notice may still be on the way: notifications are handled after responses).
    const pending = this.#pending;
    if (pending?.size) {
      if (outcome.kind === 'done') this.#withdrawn += pending.size;
      for (const p of pending.values()) {
        this.#fate(p.key, 'ended');
        this.#settle(p);
        p.answer.reject(new BackendRequestRefused(WireCode.InternalError, CALL_ENDED));
      }
      pending.clear();
    }
    this.#prefill?.clear();
    this.#changed();
    const callbacks = this.#doneCallbacks ?? [];
    this.#doneCallbacks = undefined;
    for (const cb of callbacks) {
      try {
        cb();
      } catch {
        // a done-callback must not break the others
      }
    }
  }

  #fate(key: string, fate: InputFate): void {
    (this.#fates ??= new Map()).set(key, fate);
  }

  #log(): EventLog<CallEvent> {
    this.#events ??= new EventLog(this.#maxEvents);
    return this.#events;
  }

  #changed(): void {
    this.#updatedAt = Date.now();
    if (!this.#outcome) {
      this.#status = this.#pending?.size ? 'input_required' : 'working';
      this.#waitingSince = this.#status === 'input_required' ? (this.#waitingSince ?? this.#updatedAt) : undefined;
    }
    const waiters = this.#waiters;
    this.#waiters = undefined;
    for (const w of waiters ?? []) w();
  }
}

/** Why a backend's request stopped waiting, by the reason its signal was aborted with. */
function fateOfAbort(reason: unknown): InputFate {
  if (reason instanceof InputTimedOut) return 'timed_out';
  if (reason instanceof GatewayError && reason.code === 'backend_closed') return 'lost';
  return 'withdrawn';
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
