/**
 * Limits on the sampling requests backends send to one client scope (seed 003, "Sampling"): at most
 * `maxConcurrent` outstanding at once (more wait their turn), each answered within `timeoutMs`, and a
 * circuit breaker: `failureThreshold` consecutive failures (a client error or a timeout) open it for
 * `openMs`, during which new sampling requests are refused at once with -32000; then one request goes
 * through (half-open): its success closes the breaker, its failure opens it again.
 *
 * Applied where every front's calls meet, the call engine (Call.requestInput), so the stateless front,
 * the legacy route and the proxy tools share one set of limits per scope.
 */
import { BackendRequestRefused, ClientRefusal } from '../backend/port.js';
import { abortReason, anySignal } from '../../util/abort.js';

export interface SamplingLimits {
  readonly maxConcurrent: number;
  readonly timeoutMs: number;
  readonly failureThreshold: number;
  readonly openMs: number;
}

export const SERVICE_UNAVAILABLE = -32000;

/** The abort reason of a sampling request the client did not answer within the gate's `timeoutMs`. */
export class InputTimedOut extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The client did not answer within ${timeoutMs} ms`);
    this.name = 'InputTimedOut';
  }
}
const REQUEST_TIMEOUT = -32001;

/** How a sampling request ended, for the breaker: answered, failed (client error or timeout), or neither (withdrawn, call ended). */
export type SamplingOutcome = 'success' | 'failure' | 'neutral';

export class SamplingGate {
  readonly #limits: SamplingLimits;
  readonly #now: () => number;
  readonly #onIdle: () => void;
  #active = 0;
  readonly #queue: (() => void)[] = [];
  #failures = 0;
  #openUntil = 0;
  #probing = false;

  constructor(limits: SamplingLimits, now: () => number = Date.now, onIdle: () => void = () => undefined) {
    this.#limits = limits;
    this.#now = now;
    this.#onIdle = onIdle;
  }

  /** True when the gate holds nothing worth keeping (no requests, breaker closed). */
  get idle(): boolean {
    return this.#active === 0 && this.#queue.length === 0 && this.#failures === 0 && !this.#probing;
  }

  /**
   * True when the breaker is half-open and nobody has tried it for another `openMs`: what it remembers
   * of the failures is old, and its scope may be gone (a legacy session closed), so it is forgotten and
   * the scope's next request finds it closed.
   */
  get stale(): boolean {
    return (
      this.#active === 0 && this.#queue.length === 0 && !this.#probing && this.state === 'half-open' && this.#now() >= this.#openUntil + this.#limits.openMs
    );
  }

  /** The breaker's state now. */
  get state(): 'closed' | 'open' | 'half-open' {
    if (this.#failures < this.#limits.failureThreshold) return 'closed';
    return this.#now() < this.#openUntil ? 'open' : 'half-open';
  }

  /**
   * Runs one sampling request through the gate: `send` gets a signal that aborts at the timeout or when
   * `signal` does. Rejects with -32000 while the breaker is open and -32001 at the timeout.
   */
  async run<T>(signal: AbortSignal, send: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const probe = this.#admit();
    await this.#slot(signal).catch((e: unknown) => {
      if (probe) this.#probing = false;
      throw e;
    });
    if (signal.aborted) {
      // Withdrawn while it waited for its slot.
      if (probe) this.#probing = false;
      this.#release();
      throw abortReason(signal);
    }
    const timer = new AbortController();
    const t = setTimeout(() => timer.abort(new InputTimedOut(this.#limits.timeoutMs)), this.#limits.timeoutMs);
    t.unref?.();
    let outcome: SamplingOutcome = 'neutral';
    try {
      const value = await send(anySignal([signal, timer.signal]));
      outcome = 'success';
      return value;
    } catch (e) {
      if (timer.signal.aborted && !signal.aborted) {
        outcome = 'failure';
        throw new BackendRequestRefused(REQUEST_TIMEOUT, `The client did not answer the sampling request within ${this.#limits.timeoutMs} ms`);
      }
      // A client's refusal is a failure; a request the backend withdrew or a call that ended is neither.
      if (!signal.aborted && e instanceof ClientRefusal) outcome = 'failure';
      throw e;
    } finally {
      clearTimeout(t);
      if (probe) this.#probing = false;
      this.#settle(outcome);
      this.#release();
    }
  }

  /** Refuses while open; lets one probe through when half-open. Returns true for the probe. */
  #admit(): boolean {
    const state = this.state;
    if (state === 'closed') return false;
    if (state === 'open' || this.#probing) {
      const seconds = Math.max(1, Math.ceil((this.#openUntil - this.#now()) / 1000));
      throw new BackendRequestRefused(
        SERVICE_UNAVAILABLE,
        `Sampling is unavailable for this client: ${this.#failures} sampling requests in a row failed; try again in ${seconds} s`,
      );
    }
    this.#probing = true;
    return true;
  }

  async #slot(signal: AbortSignal): Promise<void> {
    if (this.#active < this.#limits.maxConcurrent) {
      this.#active += 1;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const take = (): void => {
        signal.removeEventListener('abort', onAbort);
        this.#active += 1;
        resolve();
      };
      const onAbort = (): void => {
        const i = this.#queue.indexOf(take);
        if (i >= 0) this.#queue.splice(i, 1);
        reject(abortReason(signal));
      };
      if (signal.aborted) return onAbort();
      this.#queue.push(take);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #release(): void {
    this.#active -= 1;
    this.#queue.shift()?.();
    if (this.idle) this.#onIdle();
  }

  #settle(outcome: SamplingOutcome): void {
    if (outcome === 'success') this.#failures = 0;
    else if (outcome === 'failure') {
      this.#failures += 1;
      if (this.#failures >= this.#limits.failureThreshold) this.#openUntil = this.#now() + this.#limits.openMs;
    }
  }
}

/** The gates of every scope, made on first use and forgotten when idle, or stale (`SamplingGate.stale`). */
export class SamplingGates {
  readonly #limits: SamplingLimits;
  readonly #now: () => number;
  readonly #gates = new Map<string, SamplingGate>();

  constructor(limits: SamplingLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  get size(): number {
    return this.#gates.size;
  }

  /** How many scopes' breakers are in each state now (stale ones forgotten first). */
  states(): Record<'closed' | 'open' | 'half-open', number> {
    const counts = { closed: 0, open: 0, 'half-open': 0 };
    for (const [key, gate] of this.#gates) {
      if (gate.stale) this.#gates.delete(key);
      else counts[gate.state] += 1;
    }
    return counts;
  }

  gate(key: string): SamplingGate {
    const kept = this.#gates.get(key);
    if (kept && !kept.stale) return kept;
    const made: SamplingGate = new SamplingGate(this.#limits, this.#now, () => {
      if (this.#gates.get(key) === made) this.#gates.delete(key);
    });
    this.#gates.set(key, made);
    return made;
  }
}
