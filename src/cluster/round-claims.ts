/**
 * Each input round of a call is answered once, across every instance: the first retry that claims
 * (call, round) wins, any later one is stale. The claim is one atomic operation (in Redis: a single
 * compare-and-set), never a check followed by a set.
 */
export interface RoundClaims {
  /** True the first time `round` of `callId` is claimed, and only if no later round was claimed. */
  claim(callId: string, round: number): Promise<boolean>;
  /** Forgets the call's claims (the call is over). */
  forget(callId: string): Promise<void>;
}

export class InMemoryRoundClaims implements RoundClaims {
  readonly #claimed = new Map<string, number>();

  async claim(callId: string, round: number): Promise<boolean> {
    if ((this.#claimed.get(callId) ?? 0) >= round) return false;
    this.#claimed.set(callId, round);
    return true;
  }

  async forget(callId: string): Promise<void> {
    this.#claimed.delete(callId);
  }
}
