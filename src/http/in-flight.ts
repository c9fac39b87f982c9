/**
 * Requests in flight on this instance, per principal and in total (`gateway.maxRequestsInFlightPerPrincipal`,
 * `maxRequestsInFlightTotal`): one connection may pipeline as many requests as it likes, and Node starts
 * every one it has parsed, so a single client that sent 114,000 calls on one connection held them all
 * at once (1.8 GB of RSS, minutes of queueing for everyone else). Counted here, with no I/O: a bound of
 * one instance's memory, so a cluster's instances each count their own (as legacy sessions are).
 */
export type InFlightTaken = { readonly ok: true; release(): void } | { readonly ok: false; readonly whose: 'principal' | 'total' };

export class InFlight {
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  readonly #byPrincipal = new Map<string, number>();
  #total = 0;

  constructor(maxPerPrincipal: number, maxTotal: number) {
    this.maxPerPrincipal = maxPerPrincipal;
    this.maxTotal = maxTotal;
  }

  /** Requests in flight now (for tests and diagnostics). */
  get total(): number {
    return this.#total;
  }

  /** One request of `principal`, or which bound refuses it; `release` gives it back (once). */
  take(principal: string): InFlightTaken {
    const held = this.#byPrincipal.get(principal) ?? 0;
    if (held >= this.maxPerPrincipal) return { ok: false, whose: 'principal' };
    if (this.#total >= this.maxTotal) return { ok: false, whose: 'total' };
    this.#byPrincipal.set(principal, held + 1);
    this.#total++;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.#total--;
        const now = (this.#byPrincipal.get(principal) ?? 1) - 1;
        if (now === 0) this.#byPrincipal.delete(principal);
        else this.#byPrincipal.set(principal, now);
      },
    };
  }
}
