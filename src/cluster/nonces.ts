/**
 * Single-use tokens of one process: a nonce is accepted once, for as long as what carries it could
 * still be accepted (a forwarded request's signature lifetime). A forward is signed for the boot id
 * that names one such memory (forwarder.ts), so no store shared across instances is needed.
 */

/** The nonces of one process, each forgotten when its ttl ends (swept as new ones arrive). */
export class InMemoryNonces {
  readonly #now: () => number;
  /** Nonce → when it may be forgotten; insertion order is roughly expiry order (one ttl per caller). */
  readonly #seen = new Map<string, number>();

  /** `now`: the clock (default `Date.now`); tests move it instead of sleeping. */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** True the first time `nonce` is presented within `ttlMs`, false for every later time. */
  accept(nonce: string, ttlMs: number): boolean {
    const now = this.#now();
    this.#sweep(now);
    const until = this.#seen.get(nonce);
    if (until !== undefined && until > now) return false;
    this.#seen.delete(nonce); // re-inserted at the end: the map stays in expiry order
    this.#seen.set(nonce, now + ttlMs);
    return true;
  }

  /** True when `nonce` was accepted and is still remembered (nothing is spent). */
  spent(nonce: string): boolean {
    const until = this.#seen.get(nonce);
    return until !== undefined && until > this.#now();
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
