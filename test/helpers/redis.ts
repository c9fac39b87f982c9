/**
 * The Redis the tests use: `REDIS_URL`, else the one on 127.0.0.1:6379 (`.ci/run` makes sure one
 * answers). Each test takes its own key prefix and removes its keys afterwards.
 */
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';

export const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/** A fresh key prefix, and a function that deletes every key under it. */
export function redisPrefix(): { prefix: string; cleanup(): Promise<void> } {
  const prefix = `mcpgw-test:${randomBytes(6).toString('hex')}:`;
  return {
    prefix,
    async cleanup() {
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      try {
        const keys: string[] = [];
        for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) keys.push(...batch);
        if (keys.length) await client.del(keys);
      } finally {
        await client.close();
      }
    },
  };
}
