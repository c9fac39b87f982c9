/**
 * Token buckets of the rate limits (issue 29): the in-memory bucket on a manual clock (burst, refill,
 * retry hint, cost capped at the burst, a clock that goes back), and the Redis bucket (one script per
 * take on Redis TIME) on the tests' Redis: shared by two connections, keyed under the prefix with a
 * TTL, and counted on this instance alone, within its share, while Redis cannot be reached.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryRateBuckets, stepBucket } from '../../src/cluster/rate-buckets.js';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis/connection.js';
import { RedisRateBuckets } from '../../src/cluster/redis/rate-buckets.js';
import { silentLogger } from '../../src/log.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';

/** 60 a minute (one a second), saving up 3. */
const RULE = { capacity: 3, perMs: 1 / 1000 };

describe('the in-memory token bucket', () => {
  it('lets a burst through, then refuses with the time until a token is back, and refills with time', async () => {
    const clock = new ManualClock(1_000_000);
    const buckets = new InMemoryRateBuckets(clock.now);
    for (let i = 0; i < 3; i++) expect(await buckets.take('alice', RULE)).toEqual({ ok: true });
    expect(await buckets.take('alice', RULE)).toEqual({ ok: false, retryAfterMs: 1000 });
    expect(await buckets.take('bob', RULE)).toEqual({ ok: true }); // another key, another bucket
    clock.advance(400);
    expect(await buckets.take('alice', RULE)).toEqual({ ok: false, retryAfterMs: 600 });
    clock.advance(600);
    expect(await buckets.take('alice', RULE)).toEqual({ ok: true });
    expect(await buckets.take('alice', RULE)).toMatchObject({ ok: false });
    clock.advance(60_000); // a long pause fills the bucket, never past its burst
    for (let i = 0; i < 3; i++) expect(await buckets.take('alice', RULE)).toEqual({ ok: true });
    expect(await buckets.take('alice', RULE)).toMatchObject({ ok: false });
  });

  it('takes a cost at once or not at all, and refuses a cost above the burst whole (a batch never passes for the price of a burst)', async () => {
    const clock = new ManualClock(0);
    const buckets = new InMemoryRateBuckets(clock.now);
    expect(await buckets.take('k', RULE, 2)).toEqual({ ok: true });
    expect(await buckets.take('k', RULE, 2)).toEqual({ ok: false, retryAfterMs: 1000 }); // one is left: nothing taken
    expect(await buckets.take('k', RULE)).toEqual({ ok: true });
    clock.advance(3000);
    expect(await buckets.take('k', RULE, 10)).toEqual({ ok: false, retryAfterMs: 3000 });
    expect(await buckets.take('k', RULE, 3)).toEqual({ ok: true }); // the refused batch took nothing
  });

  it('refills nothing when the clock goes back', () => {
    const after = stepBucket({ tokens: 0, at: 5_000 }, RULE, 1, 4_000);
    expect(after.take).toEqual({ ok: false, retryAfterMs: 1000 });
    expect(after.state).toEqual({ tokens: 0, at: 5_000 });
  });

  it('forgets buckets that are full again once there are many', async () => {
    const clock = new ManualClock(0);
    const buckets = new InMemoryRateBuckets(clock.now);
    for (let i = 0; i < 1_100; i++) await buckets.take(`p${i}`, RULE);
    expect(buckets.size).toBe(1_100);
    clock.advance(2_000);
    await buckets.take('late', RULE);
    expect(buckets.size).toBe(1);
  });
});

describe('the Redis token bucket', () => {
  const connections: RedisConnection[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(connections.splice(0).map((c) => c.close()));
    await Promise.all(cleanups.splice(0).map((c) => c()));
  });
  async function connect(prefix: string): Promise<RedisConnection> {
    const c = await connectRedis({ url: REDIS_URL, prefix, logger: silentLogger, connectTimeoutMs: 2_000 });
    connections.push(c);
    return c;
  }
  function newPrefix(): string {
    const { prefix, cleanup } = redisPrefix();
    cleanups.push(cleanup);
    return prefix;
  }

  it('is one bucket for every instance, refused with a retry hint, kept under the prefix with a TTL', async () => {
    const prefix = newPrefix();
    const [a, b] = [await connect(prefix), await connect(prefix)];
    const one = new RedisRateBuckets(a, { knownLive: () => 2 });
    const two = new RedisRateBuckets(b, { knownLive: () => 2 });
    const slow = { capacity: 4, perMs: 1 / 60_000 }; // one a minute: nothing comes back during the test
    const takes = await Promise.all([one, two, one, two, one, two].map((m) => m.take('req:alice', slow)));
    expect(takes.filter((t) => t.ok)).toHaveLength(4);
    for (const t of takes.filter((t) => !t.ok)) {
      expect(t).toMatchObject({ ok: false });
      const wait = (t as { retryAfterMs: number }).retryAfterMs;
      expect(wait).toBeGreaterThan(50_000);
      expect(wait).toBeLessThanOrEqual(60_000);
    }
    expect(await two.take('req:bob', slow)).toEqual({ ok: true });
    const ttl = await a.client.pTTL(`${prefix}rate:req:alice`);
    expect(ttl).toBeGreaterThan(200_000); // four tokens to refill at one a minute, plus a second
    expect(ttl).toBeLessThanOrEqual(4 * 60_000 + 1_000);
  });

  it('counts on this instance alone, within its share, while Redis cannot be reached, and says so once', async () => {
    const prefix = newPrefix();
    const c = await connect(prefix);
    const clock = new ManualClock(0);
    const told: boolean[] = [];
    const buckets = new RedisRateBuckets(c, { knownLive: () => 2, onFallback: (away) => told.push(away), now: clock.now });
    await c.close(); // every command now fails at once as cluster_unavailable
    const rule = { capacity: 4, perMs: 1 / 1000 };
    const takes = [];
    for (let i = 0; i < 4; i++) takes.push(await buckets.take('req:alice', rule));
    expect(takes.map((t) => t.ok)).toEqual([true, true, false, false]); // half of the burst: two instances were live
    expect(takes[2]).toEqual({ ok: false, retryAfterMs: 2000 }); // and half of the rate
    expect(told).toEqual([true]);
  });
});
