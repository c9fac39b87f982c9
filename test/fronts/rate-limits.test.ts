/**
 * The rate-limit policy (fronts/rate-limits.ts) on the in-memory seams and a manual clock: which bucket
 * a request or a call is charged to, a continuation charged nothing and never refused by the
 * concurrency bound, and every unit given back once (also when a bucket refuses after the unit was taken).
 */
import { describe, expect, it } from 'vitest';
import { InMemoryQuotas } from '../../src/cluster/quotas.js';
import { InMemoryRateBuckets } from '../../src/cluster/rate-buckets.js';
import { bucketRule, createRateLimits, type RateLimitSettings } from '../../src/fronts/rate-limits.js';
import { ManualClock } from '../helpers/manual-clock.js';

function setUp(settings: Partial<RateLimitSettings>) {
  const clock = new ManualClock(0);
  const quotas = new InMemoryQuotas();
  const limits = createRateLimits({ servers: {}, ...settings }, { buckets: new InMemoryRateBuckets(clock.now), quotas });
  return { clock, quotas, limits };
}

const fresh = (backend = 'a') => ({ principal: 'alice', backend, continues: false });

describe('rate limits', () => {
  it('default a burst to one minute of the rate', () => {
    expect(bucketRule(600, undefined)).toEqual({ capacity: 600, perMs: 0.01 });
    expect(bucketRule(0.5, undefined)).toEqual({ capacity: 1, perMs: 0.5 / 60_000 });
    expect(bucketRule(600, 60).capacity).toBe(60);
  });

  it('charge requests to the principal, refusing with the time until the next one and the config key', async () => {
    const { clock, limits } = setUp({ requestsPerMinute: 60, burst: 2 });
    expect(limits.limitsRequests && !limits.limitsCalls).toBe(true);
    expect(await limits.chargeRequests('alice', 2)).toBeUndefined();
    const refused = await limits.chargeRequests('alice', 1);
    expect(refused).toMatchObject({ code: -32000, data: { reason: 'rate_limited', limit: 'gateway.rateLimits.requestsPerMinute', retryAfterMs: 1000 } });
    expect(await limits.chargeRequests('bob', 1)).toBeUndefined();
    clock.advance(1000);
    expect(await limits.chargeRequests('alice', 1)).toBeUndefined();
  });

  it('bound concurrent calls, never refusing a continuation, and give each unit back once', async () => {
    const { quotas, limits } = setUp({ maxConcurrentCalls: 1 });
    const release = await limits.admitCall(fresh());
    await expect(limits.admitCall(fresh('b'))).rejects.toMatchObject({ data: { reason: 'rate_limited', limit: 'gateway.rateLimits.maxConcurrentCalls' } });
    const next = await limits.admitCall({ ...fresh(), continues: true }); // the next round of an admitted call
    expect(quotas.count('rate-calls:alice')).toBe(2);
    release();
    release();
    expect(quotas.count('rate-calls:alice')).toBe(1);
    next();
    expect(quotas.count('rate-calls:alice')).toBe(0);
    (await limits.admitCall(fresh()))();
  });

  it("charge calls to the principal × server bucket (a server's own before the default), not continuations, giving back the unit of a refused call", async () => {
    const { quotas, limits } = setUp({ maxConcurrentCalls: 5, perServer: { callsPerMinute: 1, burst: 1 }, servers: { b: { callsPerMinute: 1, burst: 2 } } });
    await limits.admitCall(fresh('a'));
    await expect(limits.admitCall(fresh('a'))).rejects.toMatchObject({ data: { limit: 'gateway.rateLimits.perServer', server: 'a' } });
    await limits.admitCall({ ...fresh('a'), continues: true });
    await limits.admitCall(fresh('b'));
    await limits.admitCall(fresh('b'));
    await expect(limits.admitCall(fresh('b'))).rejects.toMatchObject({ data: { limit: 'gateway.rateLimits.servers.b', server: 'b' } });
    expect(await limits.admitCall({ principal: 'bob', backend: 'a', continues: false })).toBeTypeOf('function');
    expect(quotas.count('rate-calls:alice')).toBe(4); // the two refused calls hold nothing
  });
});
