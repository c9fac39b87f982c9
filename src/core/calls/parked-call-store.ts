/**
 * Where calls wait between rounds. A parked call holds a live backend request and session, so the
 * store keeps in-process handles; the requestState names the instance that holds them, so a retry
 * that reaches another instance can later be routed here (a Redis-backed directory plugs into this
 * seam). Parked calls are bounded per principal and in total, and expire with their requestState:
 * on expiry the backend request is cancelled and its session freed.
 */
import { GatewayError } from '../../errors.js';
import { type Result, ok, err } from '../../util/result.js';
import type { CallRun } from './call-run.js';

export interface ParkedCallStore {
  /** Parks `run` until `ttlMs` from now (refreshes the deadline when already parked). */
  park(run: CallRun, ttlMs: number): Result<void, 'limit'>;
  /** Looks a run up by id (parked or in a round). */
  get(id: string): CallRun | undefined;
  /** Marks a run as taken by a retry: its expiry stops until it is parked again. */
  claim(run: CallRun): void;
  /** Number of runs held. */
  readonly size: number;
  /** Cancels every held run. */
  close(): void;
}

export interface ParkedCallLimits {
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
}

interface Entry {
  run: CallRun;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The in-memory store (one instance). */
export class InMemoryParkedCallStore implements ParkedCallStore {
  readonly #limits: ParkedCallLimits;
  readonly #entries = new Map<string, Entry>();
  readonly #perPrincipal = new Map<string, number>();

  constructor(limits: ParkedCallLimits) {
    this.#limits = limits;
  }

  get size(): number {
    return this.#entries.size;
  }

  park(run: CallRun, ttlMs: number): Result<void, 'limit'> {
    let entry = this.#entries.get(run.id);
    if (!entry) {
      if (run.done) return ok(undefined);
      const count = this.#perPrincipal.get(run.principal) ?? 0;
      if (this.#entries.size >= this.#limits.maxTotal || count >= this.#limits.maxPerPrincipal) return err('limit');
      entry = { run, timer: undefined };
      this.#entries.set(run.id, entry);
      this.#perPrincipal.set(run.principal, count + 1);
      run.onDone(() => this.#remove(run.id));
    }
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = setTimeout(() => run.cancel(new GatewayError('cancelled', 'the requestState expired')), ttlMs);
    entry.timer.unref?.();
    return ok(undefined);
  }

  get(id: string): CallRun | undefined {
    return this.#entries.get(id)?.run;
  }

  claim(run: CallRun): void {
    const entry = this.#entries.get(run.id);
    if (entry?.timer) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
    }
  }

  close(): void {
    for (const { run } of [...this.#entries.values()]) run.cancel(new GatewayError('gateway_closing'));
    this.#entries.clear();
    this.#perPrincipal.clear();
  }

  #remove(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    if (entry.timer) clearTimeout(entry.timer);
    this.#entries.delete(id);
    const n = (this.#perPrincipal.get(entry.run.principal) ?? 1) - 1;
    if (n <= 0) this.#perPrincipal.delete(entry.run.principal);
    else this.#perPrincipal.set(entry.run.principal, n);
  }
}
