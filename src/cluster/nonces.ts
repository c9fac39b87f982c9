/**
 * Single-use tokens across the cluster: a nonce is accepted once, for as long as what carries it could
 * still be accepted (a forwarded request's signature lifetime). In Redis this is one `SET NX PX`
 * (redis/nonces.ts); the in-memory default serves one instance and unit tests.
 */

export interface Nonces {
  /**
   * True the first time `nonce` is presented within `ttlMs`, false for every later time. Throws when the
   * store cannot say (Redis away or too slow): the caller must refuse, never accept, then.
   */
  accept(nonce: string, ttlMs: number): Promise<boolean>;
}

/** The nonces of one process, each forgotten when its ttl ends (swept as new ones arrive). */
export class InMemoryNonces implements Nonces {
  readonly #now: () => number;
  /** Nonce → when it may be forgotten; insertion order is roughly expiry order (one ttl per caller). */
  readonly #seen = new Map<string, number>();

  /** `now`: the clock (default `Date.now`); tests move it instead of sleeping. */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async accept(nonce: string, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    this.#sweep(now);
    const until = this.#seen.get(nonce);
    if (until !== undefined && until > now) return false;
    this.#seen.delete(nonce); // re-inserted at the end: the map stays in expiry order
    this.#seen.set(nonce, now + ttlMs);
    return true;
  }

  /** How many nonces are remembered (for tests). */
  get size(): number {
    return this.#seen.size;
  }

  #sweep(now: number): void {
    for (const [nonce, until] of this.#seen) {
      if (until > now) return;
      this.#seen.delete(nonce);
    }
  }
}
