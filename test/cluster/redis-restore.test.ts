/**
 * The cluster seams when Redis goes away (a redis-server of this test's own, stopped, started again
 * empty, or frozen): commands fail fast as `cluster_unavailable`, what needs no other instance goes
 * on, and what an instance holds is written again before any lookup answers "nothing there".
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { joinRedisCluster, type RedisCluster } from '../../src/cluster/redis/cluster.js';
import { connectRedis, isUnavailable } from '../../src/cluster/redis/connection.js';
import { listenOn } from '../../src/cluster/redis/pubsub.js';
import { GatewayError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { captureLog } from '../helpers/log.js';
import { ownRedis, type OwnRedis } from '../helpers/redis-server.js';
import { pause, quietFor, settlesWithin, until } from '../helpers/until.js';

let redis: OwnRedis;
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  redis = await ownRedis();
}, 30_000);
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  if (!redis.running) await redis.start();
});
afterAll(async () => {
  await redis.stop();
});

async function cluster(n: number): Promise<RedisCluster[]> {
  const members = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      joinRedisCluster({ url: redis.url, keyPrefix: 'restore:', instanceId: `i${i}`, heartbeatMs: 100, entryTtlMs: 60_000, logger: silentLogger }),
    ),
  );
  open.push(...members);
  await until('each instance to know the others', () => members.every((m) => m.instances.knownLive === n));
  return members;
}

/** `f()` again while it fails with cluster_unavailable (the caller's connection is not back yet); its first other outcome. */
async function firstAnswer<T>(f: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await f();
    } catch (e) {
      if (!isUnavailable(e) || Date.now() > deadline) throw e;
      await pause(10); // a caller's retry, paced
    }
  }
}

describe('Redis going away', () => {
  it('fails commands at once while Redis is down, and within the deadline while it does not answer', async () => {
    // "At once" is: without waiting for the command deadline, a long one here (20 s) so that a
    // loaded machine cannot blur the two; the bounds are generous, how soon is for `npm run bench`.
    const patient = await connectRedis({ url: redis.url, logger: silentLogger, commandTimeoutMs: 20_000 });
    const conn = await connectRedis({ url: redis.url, logger: silentLogger, commandTimeoutMs: 300 });
    open.push(patient, conn);
    expect(await patient.run((c) => c.ping())).toBe('PONG');
    expect(await conn.run((c) => c.ping())).toBe('PONG');
    await redis.stop();
    let started = Date.now();
    const down = await patient.run((c) => c.ping()).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(GatewayError);
    expect((down as GatewayError).code).toBe('cluster_unavailable');
    expect(Date.now() - started).toBeLessThan(10_000);
    await redis.start();
    await firstAnswer(() => conn.run((c) => c.ping()));
    redis.freeze(true);
    try {
      // Frozen, Redis never answers: only the 300 ms deadline ends the command.
      started = Date.now();
      const frozen = await conn.run((c) => c.ping()).catch((e: unknown) => e);
      expect(isUnavailable(frozen)).toBe(true);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      redis.freeze(false);
    }
  }, 60_000);

  it('leaves the cluster and closes while Redis is down or frozen: nothing waits for an answer that cannot come', async () => {
    for (const fault of ['down', 'frozen'] as const) {
      const [member] = await cluster(1);
      if (fault === 'down') await redis.stop();
      else redis.freeze(true);
      try {
        // Before: a subscriber whose unsubscribe went out with Redis away never closed, and a
        // stopping gateway waited for it until its own deadline, then exited 1 (helper-59).
        await expect(settlesWithin(member!.close(), 10_000)).resolves.toBe('settled');
      } finally {
        redis.freeze(false);
        if (!redis.running) await redis.start();
      }
    }
  }, 60_000);

  it('refuses a first listener asked for while Redis is away (cluster_unavailable within the deadline), then closes', async () => {
    const conn = await connectRedis({ url: redis.url, logger: silentLogger, commandTimeoutMs: 300 });
    open.push(conn);
    await redis.stop();
    // Before: node-redis tried the subscriber's first connect for ever, and the listener and close() waited with it.
    const listening = listenOn(conn, 'restore:late', () => undefined).catch((e: unknown) => e);
    await expect(settlesWithin(listening, 10_000)).resolves.toBe('settled');
    expect(isUnavailable(await listening)).toBe(true);
    await expect(settlesWithin(conn.close(), 10_000)).resolves.toBe('settled');
    await redis.start();
  }, 60_000);

  it('closes within the deadline when Redis dies under a command it waits for, and a second close waits for the first', async () => {
    const conn = await connectRedis({ url: redis.url, logger: silentLogger, commandTimeoutMs: 1_000 });
    open.push(conn);
    const blocked = conn.run((c) => c.blPop('restore:never', 0)).catch((e: unknown) => e);
    const first = conn.close(); // a graceful close: it waits for the BLPOP's answer
    let firstDone = false;
    void first.then(
      () => (firstDone = true),
      () => (firstDone = true),
    );
    await redis.stop(); // which never comes
    // Before: a second close returned at once, while the first was still closing.
    await conn.close();
    expect(firstDone).toBe(true);
    expect(isUnavailable(await blocked)).toBe(true);
  }, 60_000);

  it('closes without waiting for a subscriber still connecting (dropped: its listener is told cluster_unavailable)', async () => {
    // A long deadline: a close that waited for the subscriber's connect would wait it out.
    const conn = await connectRedis({ url: redis.url, logger: silentLogger, commandTimeoutMs: 20_000 });
    open.push(conn);
    await redis.stop();
    const listening = listenOn(conn, 'restore:connecting', () => undefined).catch((e: unknown) => e);
    await expect(settlesWithin(conn.close(), 10_000)).resolves.toBe('settled');
    expect(isUnavailable(await listening)).toBe(true);
  }, 60_000);

  it('subscribes and unsubscribes within the deadline while Redis is frozen, and leaves no subscription behind once it thaws', async () => {
    const conn = await connectRedis({ url: redis.url, logger: silentLogger, commandTimeoutMs: 300 });
    const other = await connectRedis({ url: redis.url, logger: silentLogger });
    open.push(conn, other);
    const stopFirst = await listenOn(conn, 'restore:first', () => undefined);
    const subscribers = async (channel: string): Promise<number> => Number((await other.run((c) => c.pubSubNumSub(channel)))[channel] ?? 0);
    expect(await subscribers('restore:first')).toBe(1);
    redis.freeze(true);
    let late: unknown;
    try {
      // Before: node-redis waited for a frozen Redis's answer to a subscribe (and to an unsubscribe) for ever.
      const listening = listenOn(conn, 'restore:frozen', () => undefined).catch((e: unknown) => e);
      await expect(settlesWithin(listening, 10_000)).resolves.toBe('settled');
      late = await listening;
      await expect(settlesWithin(stopFirst(), 10_000)).resolves.toBe('settled');
    } finally {
      redis.freeze(false);
    }
    expect(isUnavailable(late)).toBe(true);
    // The subscribe went out before it was given up on, and was taken back after it: neither channel is listened to.
    await until('both channels unsubscribed', async () => (await subscribers('restore:frozen')) === 0 && (await subscribers('restore:first')) === 0);
  }, 60_000);

  it('says when its heartbeat succeeds again after Redis froze and thawed (no connection dropped, so nothing else says so)', async () => {
    const log = captureLog();
    const member = await joinRedisCluster({ url: redis.url, keyPrefix: 'thaw:', instanceId: 't0', heartbeatMs: 100, entryTtlMs: 60_000, logger: log.logger });
    open.push(member);
    redis.freeze(true);
    try {
      await until('a heartbeat to fail', () => log.lines.some((l) => String(l['msg']).startsWith('cluster heartbeat failed')), 20_000);
      expect(log.has('cluster heartbeat succeeds again')).toBe(false);
    } finally {
      redis.freeze(false);
    }
    await until('a heartbeat to succeed again', () => log.has('cluster heartbeat succeeds again'), 20_000);
    expect(log.lines.filter((l) => l['msg'] === 'cluster heartbeat succeeds again')).toHaveLength(1);
  }, 60_000);

  it('does not say its heartbeat succeeds while a beat is held back, Redis gone again during the re-write', async () => {
    const log = captureLog();
    const member = await joinRedisCluster({ url: redis.url, keyPrefix: 'flap:', instanceId: 'f0', heartbeatMs: 100, entryTtlMs: 60_000, logger: log.logger });
    open.push(member);
    let flap = false;
    member.onRestore('a step that sees Redis go again', async () => {
      if (flap) {
        flap = false;
        await redis.stop();
      }
      return 0;
    });
    await redis.stop();
    await until('a heartbeat to fail', () => log.lines.some((l) => String(l['msg']).startsWith('cluster heartbeat failed')), 20_000);
    flap = true;
    await redis.start(); // back for a moment: the re-write starts, and Redis goes again under it
    await until('Redis gone again', () => !redis.running && !member.available, 20_000);
    await quietFor(1_000); // ten heartbeat intervals, every beat held back
    // Before: a beat held back counted as one that succeeded, said so, and hid the second outage's failed beats.
    expect(log.has('cluster heartbeat succeeds again')).toBe(false);
  }, 60_000);

  it('holds at most maxQueuedCommands unanswered while Redis is frozen: one more fails at once, and those held are answered once it thaws', async () => {
    const conn = await connectRedis({ url: redis.url, logger: silentLogger, commandTimeoutMs: 20_000, maxQueuedCommands: 4 });
    open.push(conn);
    expect(await conn.run((c) => c.ping())).toBe('PONG');
    redis.freeze(true);
    let held: Promise<string>[];
    try {
      held = Array.from({ length: 4 }, () => conn.run((c) => c.ping()));
      let settled = 0;
      for (const h of held)
        void h.then(
          () => settled++,
          () => settled++,
        );
      // The fifth finds the queue full: refused before any of the four (which wait up to 20 s) settles.
      const refused = await conn.run((c) => c.ping()).catch((e: unknown) => e);
      expect(isUnavailable(refused)).toBe(true);
      expect(settled).toBe(0);
    } finally {
      redis.freeze(false);
    }
    expect(await Promise.all(held)).toEqual(['PONG', 'PONG', 'PONG', 'PONG']);
  }, 30_000);

  it('writes what an instance holds again when Redis comes back empty: the first lookup elsewhere finds its call, home and quota units', async () => {
    const [a, b] = await cluster(2);
    await a!.directory.register('call-1', 'i0');
    expect(await a!.homes.homeOf('alice', 'i0')).toBe('i0');
    expect(await a!.quotas.acquire([{ key: 'parked:*', limit: 1 }])).toBe(true);
    let tasksWritten = 0;
    a!.onRestore('tasks', async () => ++tasksWritten);
    await redis.stop();
    await redis.start(); // empty
    // Never "nobody holds it": b's lookups wait until a has written what it holds (its record last).
    expect(await firstAnswer(() => b!.directory.ownerOf('call-1'))).toBe('i0');
    expect(await firstAnswer(() => b!.homes.homeOf('alice', 'i1'))).toBe('i0');
    expect(await firstAnswer(() => b!.quotas.acquire([{ key: 'parked:*', limit: 1 }]))).toBe(false);
    expect(tasksWritten).toBe(1);
    expect([...(await b!.instances.live()).keys()].sort()).toEqual(['i0', 'i1']);
  }, 30_000);

  it('while Redis is away, quotas hold within this instance share; the counts are written again when it is back', async () => {
    const [a, b] = await cluster(2);
    await redis.stop();
    const unit = [{ key: 'tasks:*', limit: 4 }];
    // Two instances were live: this one's share of 4 is 2.
    expect([await a!.quotas.acquire(unit), await a!.quotas.acquire(unit), await a!.quotas.acquire(unit)]).toEqual([true, true, false]);
    await a!.quotas.release(['tasks:*']);
    expect(await a!.quotas.acquire(unit)).toBe(true);
    // An owner of a call answers for it without Redis; anyone else cannot tell.
    await a!.directory.register('call-3', 'i0');
    expect(await a!.directory.ownerOf('call-3')).toBe('i0');
    expect(isUnavailable(await b!.directory.ownerOf('call-3').catch((e: unknown) => e))).toBe(true);
    await redis.start(); // empty
    expect(await firstAnswer(() => b!.directory.ownerOf('call-3'))).toBe('i0');
    // a's two units were written again: b may take the other two, no more.
    expect([await b!.quotas.acquire(unit), await b!.quotas.acquire(unit), await b!.quotas.acquire(unit)]).toEqual([true, true, false]);
  }, 30_000);
});
