/**
 * Token buckets on Redis (gateway.rateLimits across instances): one Lua script per take refills the
 * bucket and takes from it atomically, on the Redis server's clock (`TIME`), so the instances' own
 * clocks never matter. A bucket is a hash `<prefix>rate:<key>` {tokens, at} that expires once it would
 * be full again (a missing bucket is a full one).
 *
 * While Redis is away, a take is made on this instance alone, within its share of the bucket (the
 * capacity and rate divided by the instances last seen live), the way the quotas degrade
 * (seams.ts): requests go on, limited roughly as before; one line is logged when that starts and one
 * when Redis answers again.
 */
import { InMemoryRateBuckets, type BucketRule, type BucketTake, type RateBuckets } from '../rate-buckets.js';
import { isUnavailable, type RedisConnection } from './connection.js';

/**
 * KEYS[1] the bucket; ARGV[1] capacity, ARGV[2] tokens per ms, ARGV[3] cost (at most the capacity).
 * Returns {1, 0} when taken, {0, ms until `cost` tokens are there} when not. The same arithmetic as
 * `stepBucket` (rate-buckets.ts): a missing bucket is full; a clock that went back refills nothing.
 * The key lives as long as the bucket needs to be full again (then it is the same as a missing one).
 */
const TAKE = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local saved = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(saved[1])
local at = tonumber(saved[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
if now > at then
  tokens = math.min(capacity, tokens + (now - at) * rate)
  at = now
end
local taken = 0
local wait = 0
if tokens >= cost then
  tokens = tokens - cost
  taken = 1
else
  wait = math.ceil((cost - tokens) / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((capacity - tokens) / rate)) + 1000)
return {taken, wait}`;

export interface RedisRateBucketsOptions {
  /** How many instances were live when last seen (the share a take falls back to while Redis is away). */
  readonly knownLive: () => number;
  /** Told once when takes start to be made on this instance alone (Redis away), and once when Redis answers again. */
  readonly onFallback?: ((away: boolean) => void) | undefined;
  /** The clock of the fallback buckets (default `Date.now`). */
  readonly now?: () => number;
}

export class RedisRateBuckets implements RateBuckets {
  readonly #redis: RedisConnection;
  readonly #opts: RedisRateBucketsOptions;
  readonly #local: InMemoryRateBuckets;
  #away = false;

  constructor(redis: RedisConnection, opts: RedisRateBucketsOptions) {
    this.#redis = redis;
    this.#opts = opts;
    this.#local = new InMemoryRateBuckets(opts.now);
  }

  /** Throws only what Redis itself refused (a fault); Redis away is a local take. */
  async take(key: string, rule: BucketRule, cost = 1): Promise<BucketTake> {
    // Larger than the bucket: refused whole (cluster/rate-buckets.ts stepBucket), nothing taken.
    if (cost > rule.capacity) return { ok: false, retryAfterMs: Math.ceil(rule.capacity / rule.perMs) };
    const need = cost;
    let answer: unknown;
    try {
      answer = await this.#redis.run((c) =>
        c.eval(TAKE, { keys: [this.#redis.key('rate', key)], arguments: [String(rule.capacity), String(rule.perMs), String(need)] }),
      );
    } catch (e) {
      if (!isUnavailable(e)) throw e;
      this.#mark(true);
      return this.#local.takeNow(key, shareOf(rule, this.#opts.knownLive()), cost);
    }
    this.#mark(false);
    const [taken, wait] = Array.isArray(answer) ? answer.map(Number) : [];
    return taken === 1 ? { ok: true } : { ok: false, retryAfterMs: Math.max(1, wait ?? 1) };
  }

  #mark(away: boolean): void {
    if (away === this.#away) return;
    this.#away = away;
    this.#opts.onFallback?.(away);
  }
}

/** This instance's share of a bucket among `live` instances (at least one token of capacity). */
function shareOf(rule: BucketRule, live: number): BucketRule {
  const n = Math.max(1, live);
  return { capacity: Math.max(1, Math.floor(rule.capacity / n)), perMs: rule.perMs / n };
}
