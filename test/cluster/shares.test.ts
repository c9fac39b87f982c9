/**
 * Fair shares over the quota seam: per principal and in total in one step, which bound refused named,
 * across instances on a real Redis (the same script as the other quotas), and counted on this
 * instance alone when the shared counters fail.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { joinRedisCluster, type RedisCluster } from '../../src/cluster/redis/cluster.js';
import { InMemoryQuotas, type Quotas } from '../../src/cluster/quotas.js';
import { createShares } from '../../src/cluster/shares.js';
import { silentLogger } from '../../src/log.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';

const LIMITS = { kind: 'await', perPrincipal: 2, total: 3 };

const open: RedisCluster[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

describe('fair shares', () => {
  it('refuses a principal past its own bound (whose: principal) and anyone past the total (whose: total); a release frees one unit once', async () => {
    const quotas = new InMemoryQuotas();
    const shares = createShares(quotas);
    const a1 = await shares.take('alice', LIMITS);
    const a2 = await shares.take('alice', LIMITS);
    expect([a1.ok, a2.ok]).toEqual([true, true]);
    expect(await shares.take('alice', LIMITS)).toEqual({ ok: false, whose: 'principal' });
    expect(quotas.count('await:*')).toBe(2); // naming the bound took nothing
    expect((await shares.take('bob', LIMITS)).ok).toBe(true);
    expect(await shares.take('carol', LIMITS)).toEqual({ ok: false, whose: 'total' });
    if (!a1.ok) throw new Error('unreachable');
    await a1.release();
    await a1.release();
    expect(quotas.count('await:alice')).toBe(1);
    expect(quotas.count('await:*')).toBe(2);
    expect((await shares.take('carol', LIMITS)).ok).toBe(true);
  });

  it('holds both bounds across instances on Redis', async () => {
    const { prefix, cleanup } = redisPrefix();
    cleanups.push(cleanup);
    const members = await Promise.all(
      ['s0', 's1'].map((instanceId) =>
        joinRedisCluster({ url: REDIS_URL, keyPrefix: prefix, instanceId, heartbeatMs: 1_000, entryTtlMs: 60_000, logger: silentLogger }),
      ),
    );
    open.push(...members);
    const [a, b] = members.map((m) => createShares(m.quotas));
    const taken = await Promise.all([a!, b!, a!, b!].map((s) => s.take('alice', LIMITS)));
    expect(taken.filter((t) => t.ok)).toHaveLength(2);
    expect(taken.filter((t) => !t.ok)).toEqual([
      { ok: false, whose: 'principal' },
      { ok: false, whose: 'principal' },
    ]);
    expect((await b!.take('bob', LIMITS)).ok).toBe(true);
    expect(await a!.take('carol', LIMITS)).toEqual({ ok: false, whose: 'total' });
  });

  it('names the bound by probing the total when the quotas cannot name it (a wrapper without acquireNaming)', async () => {
    const inner = new InMemoryQuotas();
    const plain: Quotas = { acquire: (c) => inner.acquire(c), release: (k) => inner.release(k) };
    const shares = createShares(plain);
    await shares.take('alice', LIMITS);
    await shares.take('alice', LIMITS);
    expect(await shares.take('alice', LIMITS)).toEqual({ ok: false, whose: 'principal' });
    await shares.take('bob', LIMITS);
    expect(await shares.take('carol', LIMITS)).toEqual({ ok: false, whose: 'total' });
    expect(inner.count('await:*')).toBe(3);
  });

  it('counts on this instance alone, with the same bounds, when the shared counters fail', async () => {
    const failing: Quotas = {
      acquire: () => Promise.reject(new Error('The client is closed')),
      release: () => Promise.reject(new Error('The client is closed')),
    };
    const seen: string[] = [];
    const shares = createShares(failing, (e) => seen.push(e.message));
    const a1 = await shares.take('alice', LIMITS);
    expect(a1.ok).toBe(true);
    expect((await shares.take('alice', LIMITS)).ok).toBe(true);
    expect(await shares.take('alice', LIMITS)).toEqual({ ok: false, whose: 'principal' });
    if (!a1.ok) throw new Error('unreachable');
    await a1.release(); // given back where it was taken
    expect((await shares.take('alice', LIMITS)).ok).toBe(true);
    expect(seen[0]).toBe('The client is closed');
  });
});
