/**
 * Token buckets that must hold across instances (gateway.rateLimits): a bucket holds at most
 * `capacity` tokens, gains `perMs` tokens each millisecond, and a take of `cost` tokens succeeds only
 * when that many are there (refill and take are one step). A missing bucket is a full one, so a bucket
 * idle long enough to be full again may be forgotten. In memory here (one instance); on Redis, one Lua
 * script per take on the Redis server's clock (redis/rate-buckets.ts).
 */

/** The shape of one bucket. */
export interface BucketRule {
  /** The most tokens it holds (the burst). */
  readonly capacity: number;
  /** Tokens gained per millisecond. */
  readonly perMs: number;
}

/** A take's outcome: taken, or refused with how long until `cost` tokens are there. */
export type BucketTake = { readonly ok: true } | { readonly ok: false; readonly retryAfterMs: number };

export interface RateBuckets {
  /** Takes `cost` tokens (default 1; at most `rule.capacity` are asked) from the bucket `key`, or none. */
  take(key: string, rule: BucketRule, cost?: number): Promise<BucketTake>;
}

/** One bucket's state: its tokens as of `at` (ms). */
export interface BucketState {
  readonly tokens: number;
  readonly at: number;
}

/**
 * One refill-and-take step at `now` (the same arithmetic as the Redis script): the bucket's new state
 * and the outcome. A clock that went back refills nothing. A `cost` above the capacity (a batch larger
 * than the burst) is refused whole, taking nothing: it could never pass, and capping it would let any
 * batch through for the price of a burst.
 */
export function stepBucket(state: BucketState | undefined, rule: BucketRule, cost: number, now: number): { state: BucketState; take: BucketTake } {
  const at = Math.max(state?.at ?? now, now);
  const tokens = state === undefined ? rule.capacity : Math.min(rule.capacity, state.tokens + Math.max(0, now - state.at) * rule.perMs);
  if (cost > rule.capacity) return { state: { tokens, at }, take: { ok: false, retryAfterMs: Math.ceil(rule.capacity / rule.perMs) } };
  const need = cost;
  if (tokens >= need) return { state: { tokens: tokens - need, at }, take: { ok: true } };
  return { state: { tokens, at }, take: { ok: false, retryAfterMs: Math.ceil((need - tokens) / rule.perMs) } };
}

/** How long a bucket left alone takes to be full again (after which it may be forgotten), in ms. */
export function refillMs(state: BucketState, rule: BucketRule): number {
  return Math.ceil((rule.capacity - state.tokens) / rule.perMs);
}

/** Buckets kept before a sweep of the full ones is worth doing. */
const SWEEP_ABOVE = 1_024;

/** Token buckets of this process, on `now` (injectable: tests move a manual clock). */
export class InMemoryRateBuckets implements RateBuckets {
  readonly #now: () => number;
  /** Each bucket, and when it is full again if left alone (then it is the same as a missing one). */
  readonly #buckets = new Map<string, BucketState & { readonly fullAt: number }>();
  #sweptAt = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Buckets remembered (full ones may be forgotten). */
  get size(): number {
    return this.#buckets.size;
  }

  /** As `take`, but synchronous (the Redis buckets fall back to it). */
  takeNow(key: string, rule: BucketRule, cost = 1): BucketTake {
    const now = this.#now();
    const { state, take } = stepBucket(this.#buckets.get(key), rule, cost, now);
    this.#buckets.set(key, { ...state, fullAt: state.at + refillMs(state, rule) });
    this.#sweep(now);
    return take;
  }

  async take(key: string, rule: BucketRule, cost = 1): Promise<BucketTake> {
    return this.takeNow(key, rule, cost);
  }

  /** Forgets the buckets that are full again, at most once a second, and only when there are many. */
  #sweep(now: number): void {
    if (this.#buckets.size <= SWEEP_ABOVE || now - this.#sweptAt < 1_000) return;
    this.#sweptAt = now;
    for (const [key, b] of this.#buckets) if (b.fullAt <= now) this.#buckets.delete(key);
  }
}
