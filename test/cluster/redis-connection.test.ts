/** The Redis connection on a real Redis: what a command costs besides the command. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis/connection.js';
import { REDIS_URL } from '../helpers/redis.js';

const open: RedisConnection[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.splice(0).map((c) => c.close()));
});

describe('Redis connection', () => {
  it("makes no AbortSignal.timeout for a command (node-redis's own timeout, which fired 5 s later for every command, answered or not)", async () => {
    const conn = await connectRedis({ url: REDIS_URL, logger: silentLogger, commandTimeoutMs: 1_000 });
    open.push(conn);
    const timeouts = vi.spyOn(AbortSignal, 'timeout');
    const answers = await Promise.all(Array.from({ length: 20 }, () => conn.run((c) => c.ping())));
    expect(answers).toEqual(Array.from({ length: 20 }, () => 'PONG'));
    expect(timeouts).not.toHaveBeenCalled();
  });
});
