/**
 * The call engine: starts calls on backends, keeps every live call of this instance in a local
 * registry (by id), records the owner of a call a retry may name in the call directory (`publish`: a
 * call that finishes in one exchange never touches it), keeps a finished call readable for the
 * retention its front asked for, and drains or cancels everything on shutdown.
 *
 * The engine decides nothing about clients: what a disconnect means, when a waiting call expires and
 * how input is asked for belong to the fronts.
 */
import type { CallDirectory } from '../../cluster/call-directory.js';
import { GatewayError } from '../../errors.js';
import { wakeOrAbort } from '../../util/abort.js';
import { background, type BackgroundLog } from '../../util/background.js';
import { newId } from '../../util/ids.js';
import type { BackendPort } from '../backend/port.js';
import type { InputCapabilities } from '../input-capabilities.js';
import { SamplingGates, type SamplingGate, type SamplingLimits } from './sampling-gate.js';
import { AskPatterns } from './ask-patterns.js';
import { Call } from './call.js';
import { traceBackendCall } from './traced-call.js';
import type { InputResponseMap } from './input-responses.js';

export interface CallEngineOptions {
  readonly instanceId: string;
  readonly directory: CallDirectory;
  /** Hard limit for one backend call, all rounds included. */
  readonly callTimeoutMs: number;
  /** Limits on the sampling requests backends send to one caller scope (principal, or a session or workspace in it). */
  readonly sampling?: SamplingLimits | undefined;
  /** Where a failed background step (a directory entry that could not be removed) is reported. */
  readonly log?: BackgroundLog | undefined;
  /** Rate limits: lets each call start or throws why not (fronts/rate-limits.ts); calls of a relaying backend (the proxy tools) are not asked. */
  readonly admit?: CallAdmission | undefined;
}

/**
 * Admits a call about to start (rate limits), or throws the refusal (a wire error); resolves to what
 * gives back what it took, called once when the call ends.
 */
export type CallAdmission = (call: { readonly principal: string; readonly backend: string; readonly continues: boolean }) => Promise<() => void>;

export interface StartCall {
  readonly principal: string;
  /** The scopes the caller's token grants (OAuth), passed on to the backend call. */
  readonly tokenScopes?: ReadonlySet<string> | undefined;
  /** The caller's state scope inside its principal (a legacy session), for backends that keep state per scope. */
  readonly scope?: string | undefined;
  readonly method: string;
  readonly backend: BackendPort;
  /** Params as the backend gets them. */
  readonly params: Record<string, unknown>;
  readonly caps: InputCapabilities;
  /** The caller's capabilities as declared. */
  readonly capabilities: Record<string, unknown>;
  readonly logLevel?: string | undefined;
  /** Answers the caller already gave; a stateless backend gets them with its `requestState`. */
  readonly inputResponses?: InputResponseMap | undefined;
  readonly requestState?: string | undefined;
  /** How long the call stays readable after it ends (default 0: removed at once). */
  readonly retainMs?: number;
  /** The connection of the request that starts the call (BackendCall.connection). */
  readonly connection?: AbortSignal | undefined;
  /**
   * What the call's input patterns are learned under (ask-patterns.ts): a tool's or prompt's name as its
   * backend knows it, a resource's template ('' for a resource read by URI alone); none: not learned.
   */
  readonly operation?: string | undefined;
  /** It continues a call already admitted (a task's resume, the proxy tools' next call for a task): rate limits charge it nothing. */
  readonly continues?: boolean | undefined;
}

export class CallEngine {
  readonly instanceId: string;
  readonly #opts: CallEngineOptions;
  readonly #calls = new Map<string, Call>();
  readonly #retention = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #idleWaiters = new Set<() => void>();
  /** The calls recorded in the directory (`publish`), unrecorded when they are removed. */
  readonly #published = new Set<string>();
  #live = 0;

  readonly #sampling: SamplingGates | undefined;
  /** How each backend operation asks for input, learned from the calls of this instance. */
  readonly #askPatterns = new AskPatterns();

  constructor(options: CallEngineOptions) {
    this.#sampling = options.sampling ? new SamplingGates(options.sampling) : undefined;
    this.#opts = options;
    this.instanceId = options.instanceId;
  }

  /** Calls held by this instance (live and retained). */
  get size(): number {
    return this.#calls.size;
  }
  /** Calls not yet ended. */
  get live(): number {
    return this.#live;
  }

  /** Starts a backend call; resolves once it is admitted and running (`publish` records it before its id is handed out). */
  async start(spec: StartCall): Promise<Call> {
    // Rate limits: the calls a proxy tool makes are admitted themselves, not the proxy tool's own call.
    const admit = spec.backend.relaysInput ? undefined : this.#opts.admit;
    const release = admit ? await admit({ principal: spec.principal, backend: spec.backend.name, continues: spec.continues === true }) : undefined;
    const call = new Call({
      id: newId(),
      principal: spec.principal,
      method: spec.method,
      backend: spec.backend.name,
      caps: spec.caps,
      prefill: spec.inputResponses,
      // Requests a proxy relays were limited where they were made.
      sampling: spec.backend.relaysInput ? undefined : this.#samplingGateOf(spec),
      // A relaying backend's call (a proxy tool) asks as the call it relays for: nothing learned under its name.
      askPatterns: spec.backend.relaysInput ? undefined : this.#askPatterns,
      operation: spec.operation,
    });
    this.#calls.set(call.id, call);
    this.#live++;
    this.#whenDone(call, release, spec.retainMs ?? 0);
    const traced = { backend: spec.backend.name, method: spec.method, params: spec.params };
    call.run((life) =>
      traceBackendCall(traced, call, (channel) =>
        spec.backend.call({
          method: spec.method,
          params: spec.params,
          principal: spec.principal,
          tokenScopes: spec.tokenScopes,
          scope: spec.scope,
          caps: spec.caps,
          capabilities: spec.capabilities,
          logLevel: spec.logLevel,
          inputResponses: spec.inputResponses,
          requestState: spec.requestState,
          timeoutMs: this.#opts.callTimeoutMs,
          // The AbortSignal is made only for a backend that reads it (a session backend listens to `cancel`).
          get signal() {
            return call.signal;
          },
          cancel: life,
          get connection() {
            return spec.connection;
          },
          channel,
        }),
      ),
    );
    return call;
  }

  /**
   * Gives back the call's admission and retains it when it ends. A function of its own, so the
   * callback holds only what it needs (a closure made in `start` would keep its whole spec alive for
   * as long as the call lives: issue 30).
   */
  #whenDone(call: Call, release: (() => void) | undefined, retainMs: number): void {
    call.onDone(() => {
      release?.();
      this.#ended(call, retainMs);
    });
  }

  /**
   * Where a call's sampling requests are limited: its caller's scope's gate, made at the first one (a
   * legacy session whose calls never sampled left a gate behind for good, one per session).
   */
  #samplingGateOf(spec: StartCall): (() => SamplingGate) | undefined {
    const gates = this.#sampling;
    if (!gates) return undefined;
    const key = `${spec.principal}\u0000${spec.scope ?? ''}`;
    return () => gates.gate(key);
  }

  /** The sampling breakers of the callers' scopes, by state (empty without sampling limits). */
  breakers(): Record<string, number> {
    return this.#sampling?.states() ?? {};
  }

  /** A call this instance holds (live or retained), by id. */
  get(id: string): Call | undefined {
    return this.#calls.get(id);
  }

  /**
   * Records in the call directory that this instance holds `call`, before anything that names it
   * leaves (the requestState of its first `input_required`): a retry that reaches another instance
   * learns where it lives. Once per call; it is unrecorded when the call is removed.
   */
  async publish(call: Call): Promise<void> {
    if (this.#published.has(call.id) || this.#calls.get(call.id) !== call) return;
    this.#published.add(call.id);
    try {
      await this.#opts.directory.register(call.id, this.instanceId);
    } catch (e) {
      this.#published.delete(call.id);
      throw e;
    }
  }

  /** The instance that owns `id`, from the directory. */
  ownerOf(id: string): Promise<string | undefined> {
    return this.#opts.directory.ownerOf(id);
  }

  /** Resolves when no call is live, or rejects when `signal` aborts first. */
  whenIdle(signal: AbortSignal): Promise<void> {
    if (this.#live === 0) return Promise.resolve();
    return wakeOrAbort(this.#idleWaiters, signal);
  }

  /** Cancels each live call `which` picks, with `reason`. */
  cancelWhere(which: (call: Call) => boolean, reason: unknown): void {
    for (const call of [...this.#calls.values()]) if (!call.done && which(call)) call.cancel(reason);
  }

  /** Cancels every live call with `reason` (default: the gateway is closing). */
  cancelAll(reason: unknown = new GatewayError('gateway_closing')): void {
    for (const call of [...this.#calls.values()]) call.cancel(reason);
  }

  /** Cancels every call and forgets every retained one. Idempotent. */
  async close(): Promise<void> {
    this.cancelAll();
    for (const timer of this.#retention.values()) clearTimeout(timer);
    this.#retention.clear();
    const ids = [...this.#published];
    this.#published.clear();
    this.#calls.clear();
    await Promise.allSettled(ids.map((id) => this.#opts.directory.unregister(id)));
  }

  #ended(call: Call, retainMs: number): void {
    this.#live--;
    if (this.#live === 0) {
      const waiters = [...this.#idleWaiters];
      this.#idleWaiters.clear();
      for (const w of waiters) w();
    }
    const remove = (): void => {
      this.#retention.delete(call.id);
      if (this.#calls.get(call.id) !== call) return;
      this.#calls.delete(call.id);
      if (this.#published.delete(call.id)) background('remove a call from the call directory', () => this.#opts.directory.unregister(call.id), this.#opts.log);
    };
    if (retainMs <= 0) return remove();
    const timer = setTimeout(remove, retainMs);
    timer.unref?.();
    this.#retention.set(call.id, timer);
  }
}
