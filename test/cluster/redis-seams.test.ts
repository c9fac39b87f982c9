/** The cluster seams on a real Redis: quotas across instances, liveness by heartbeat. */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { joinRedisCluster, type RedisCluster } from '../../src/cluster/redis/cluster.js';
import { connectRedis } from '../../src/cluster/redis/connection.js';
import { Instances } from '../../src/cluster/redis/instances.js';
import { RedisQuotas } from '../../src/cluster/redis/seams.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const open: RedisCluster[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function cluster(n: number, heartbeatMs = 1_000): Promise<RedisCluster[]> {
  const { prefix, cleanup } = redisPrefix();
  cleanups.push(cleanup);
  const members = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      joinRedisCluster({ url: REDIS_URL, keyPrefix: prefix, instanceId: `i${i}`, heartbeatMs, entryTtlMs: 60_000, logger: silentLogger }),
    ),
  );
  open.push(...members);
  return members;
}

describe('Redis cluster seams', () => {
  it('holds a quota across instances, all counters or none, and gives units back', async () => {
    const [a, b] = await cluster(2);
    const counters = (p: string) => [
      { key: `parked:${p}`, limit: 2 },
      { key: 'parked:*', limit: 3 },
    ];
    const asking = [a, b, a, b, a];
    const results = await Promise.all(asking.map((m) => m!.quotas.acquire(counters('alice'))));
    expect(results.filter(Boolean)).toHaveLength(2); // alice's own limit
    expect(await b!.quotas.acquire(counters('bob'))).toBe(true);
    expect(await a!.quotas.acquire(counters('carol'))).toBe(false); // the total is full: nothing taken
    // Given back by an instance that holds one of alice's units (which won depends on the order the
    // two connections' scripts ran in; an instance gives back only what it holds).
    const holder = asking[results.indexOf(true)]!;
    await holder.quotas.release(['parked:alice', 'parked:*']);
    expect(await b!.quotas.acquire(counters('carol'))).toBe(true);
  });

  it("knows a call's owner while the owner's heartbeat is current, and forgets it (and its quota units) when the owner leaves", async () => {
    const [a, b] = await cluster(2);
    await a!.directory.register('call-9', 'i0');
    expect(await b!.directory.ownerOf('call-9')).toBe('i0');
    expect(await b!.quotas.acquire([{ key: 'tasks:*', limit: 1 }])).toBe(true);
    expect(await a!.quotas.acquire([{ key: 'tasks:*', limit: 1 }])).toBe(false);
    await b!.close(); // i1 leaves: its unit no longer counts
    expect(await a!.quotas.acquire([{ key: 'tasks:*', limit: 1 }])).toBe(true);
    await a!.close();
    const [c] = await cluster(1);
    expect(await c!.directory.ownerOf('call-9')).toBeUndefined();
    expect(await c!.directory.ownerOf('never-registered')).toBeUndefined();
  });

  it("keeps a crashed instance's calls its own while its heartbeat only lapsed, and takes it for gone a heartbeat ttl later", async () => {
    const [b] = await cluster(1); // heartbeat 1,000 ms: a lapse of up to 3,000 ms is not yet a death for b
    // A crashed instance: it beat once, holds a call and a quota unit, and never beats again (nobody removes it).
    const redis = await connectRedis({ url: REDIS_URL, prefix: b!.instances.key.slice(0, -'instances'.length), logger: silentLogger });
    /** Sets the crashed instance's heartbeat to have lapsed `ms` ago, on the Redis server's clock. */
    const lapsedFor = (ms: number): Promise<unknown> =>
      redis.run(async (c) => {
        const [s, us] = (await c.sendCommand(['TIME'])) as [string, string];
        return c.zAdd(b!.instances.key, { score: Number(s) * 1000 + Math.floor(Number(us) / 1000) - ms, value: 'crashed' });
      });
    try {
      // Its one beat stands for a minute: it lapses only when the test says so (a 150 ms ttl lapsed on its
      // own before the first look on a loaded CI machine).
      const crashed = new Instances(redis, { instanceId: 'crashed', heartbeatMs: 20_000, ttlMs: 60_000 });
      await crashed.beat();
      await b!.directory.register('call-x', 'crashed');
      await new RedisQuotas(redis, crashed, 'crashed', { dirty: () => undefined }).acquire([{ key: 'tasks:*', limit: 1 }]);
      expect(await b!.directory.ownerOf('call-x')).toBe('crashed');
      expect(await b!.instances.urlOf('crashed')).toBe(''); // alive, no internal URL given
      expect(await b!.quotas.acquire([{ key: 'tasks:*', limit: 1 }])).toBe(false);
      // Lapsed a moment ago (a late beat on a loaded machine looks the same): out of the live set and its
      // quota unit no longer counts, but what it holds is still its own: a retry goes there.
      await lapsedFor(1);
      expect([...(await b!.instances.live()).keys()]).toEqual(['i0']);
      expect(await b!.instances.alive('crashed')).toBe(true);
      expect(await b!.directory.ownerOf('call-x')).toBe('crashed');
      expect(await b!.quotas.acquire([{ key: 'tasks:*', limit: 1 }])).toBe(true);
      // Lapsed a whole heartbeat ttl ago: gone, and its call with it.
      await lapsedFor(b!.instances.ttlMs + 1);
      expect(await b!.instances.urlOf('crashed')).toBeUndefined();
      expect(await b!.instances.alive('crashed')).toBe(false);
      expect(await b!.directory.ownerOf('call-x')).toBeUndefined();
    } finally {
      await redis.close();
    }
  });
});

describe('Redis fan-out', () => {
  it('delivers each message to every instance, and makes observations of one thing by several instances one message', async () => {
    const [a, b, c] = await cluster(3);
    const heard: string[][] = [[], [], []];
    const stops = await Promise.all([a, b, c].map((m, i) => m!.fanout.listen((msg) => heard[i]!.push(String(msg['n'])))));
    try {
      expect(await a!.fanout.publish({ n: 'plain' })).toBe(true);
      const once = { key: 'list:shared:tools', windowMs: 60_000 };
      // A, B and C all saw the same announcement: only the first goes out.
      const sent = await Promise.all([a, b, c].map((m, i) => m!.fanout.publish({ n: `seen-by-${i}` }, once)));
      expect(sent.filter(Boolean)).toHaveLength(1);
      const owner = sent.indexOf(true);
      // The owner's own next announcement is a second change: it goes out; another instance's is still dropped.
      const members = [a, b, c];
      expect(await members[owner]!.fanout.publish({ n: 'second' }, once)).toBe(true);
      expect(await members[(owner + 1) % 3]!.fanout.publish({ n: 'dropped' }, once)).toBe(false);
      // A final plain message: pub/sub keeps one publisher's order, so once it arrived everything before it did.
      await a!.fanout.publish({ n: 'end' });
      await until('the final message on every instance', () => heard.every((h) => h.includes('end')));
      for (const h of heard) expect(h.filter((n) => n !== 'end' && n !== 'second' && n !== 'plain')).toEqual([`seen-by-${owner}`]);
      for (const h of heard) expect(h).toContain('second');
    } finally {
      for (const stop of stops) await stop();
    }
  });

  it('announces every write of a task to its watchers on other instances, until they stop', async () => {
    const [a, b] = await cluster(2);
    const seen: string[] = [];
    const stop = await b!.tasks.watch('i0~t1', (t) => seen.push(String(t.snapshot['status'])));
    const write = (status: string) => a!.tasks.save('i0~t1', { principal: 'p', instance: 'i0', snapshot: { taskId: 'i0~t1', status } }, 60_000);
    await write('working');
    await write('completed');
    await until('both writes at the watcher', () => seen.length >= 2);
    expect(seen).toEqual(['working', 'completed']);
    await stop();
    // A write after stop reaches a watcher still listening, and not the one that stopped.
    const still: string[] = [];
    const stopStill = await b!.tasks.watch('i0~t1', (t) => still.push(String(t.snapshot['status'])));
    await write('forgotten');
    // The watcher still listening is the barrier: the one that stopped would have had the write by now.
    await until('the write at the watcher still listening', () => still.length >= 1);
    await stopStill();
    expect(still).toEqual(['forgotten']);
    expect(seen).toEqual(['working', 'completed']);
    expect((await b!.tasks.load('i0~t1'))?.snapshot).toMatchObject({ status: 'forgotten' });
  });
});

describe('instance ids', () => {
  it('refuses to join with the id of a live instance at another URL (a restart at its own URL may take it back)', async () => {
    const { prefix, cleanup } = redisPrefix();
    cleanups.push(cleanup);
    const join = (internalUrl: string) =>
      joinRedisCluster({ url: REDIS_URL, keyPrefix: prefix, instanceId: 'same', internalUrl, heartbeatMs: 1_000, entryTtlMs: 60_000, logger: silentLogger });
    const first = await join('http://127.0.0.1:1001');
    open.push(first);
    await expect(join('http://127.0.0.1:1002')).rejects.toThrow(/instance id same/);
    const again = await join('http://127.0.0.1:1001');
    open.push(again);
    expect(await again.instances.urlOf('same')).toBe('http://127.0.0.1:1001');
  });

  it('leave no URL behind: an instance that stops takes its own, and a heartbeat drops those of members dead for a day', async () => {
    const { prefix, cleanup } = redisPrefix();
    cleanups.push(cleanup);
    const join = (instanceId: string) =>
      joinRedisCluster({
        url: REDIS_URL,
        keyPrefix: prefix,
        instanceId,
        internalUrl: `http://127.0.0.1/${instanceId}`,
        heartbeatMs: 1_000,
        entryTtlMs: 60_000,
        logger: silentLogger,
      });
    const redis = await connectRedis({ url: REDIS_URL, prefix, logger: silentLogger });
    try {
      const urls = (): Promise<Record<string, string>> => redis.run((c) => c.hGetAll(redis.key('instance-urls')));
      const [a, b] = [await join('a'), await join('b')];
      open.push(b);
      expect(Object.keys(await urls()).sort()).toEqual(['a', 'b']);
      await a.close();
      expect(Object.keys(await urls())).toEqual(['b']);
      // An instance that died two days ago and never stopped: its heartbeat and URL are still there.
      await redis.run(async (c) => {
        const [sec] = (await c.sendCommand(['TIME'])) as [string, string];
        await c.zAdd(b.instances.key, { score: (Number(sec) - 2 * 86_400) * 1000, value: 'dead' });
        await c.hSet(redis.key('instance-urls'), 'dead', 'http://127.0.0.1/dead');
      });
      expect(Object.keys(await urls()).sort()).toEqual(['b', 'dead']);
      await b.instances.beat();
      expect(Object.keys(await urls())).toEqual(['b']);
      expect(await redis.run((c) => c.zScore(b.instances.key, 'dead'))).toBeNull();
    } finally {
      await redis.close();
    }
  });
});
