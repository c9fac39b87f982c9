/**
 * The Redis connection of a cluster of gateway instances (node-redis, the official client: typed
 * commands, Lua scripts with `eval`, pub/sub on a duplicated connection, reconnect with backoff).
 * Every key the gateway writes starts with `prefix`, so several clusters (or test runs) can share one
 * Redis. The URL is never logged (it may carry a password).
 */
import { createClient } from 'redis';
import type { Logger } from '../../log.js';

function makeClient(url: string, connectTimeoutMs: number) {
  return createClient({
    url,
    socket: {
      connectTimeout: connectTimeoutMs,
      // Backoff up to 2 s between attempts while Redis is away; commands fail meanwhile (no offline queue growth).
      reconnectStrategy: (retries: number) => Math.min(2_000, 50 * 2 ** Math.min(retries, 6)),
    },
    disableOfflineQueue: true,
  });
}

export type RedisClient = ReturnType<typeof makeClient>;

export interface RedisOptions {
  readonly url: string;
  /** Prepended to every key (default `mcpgw:`). */
  readonly prefix?: string | undefined;
  readonly logger: Logger;
  /** How long the first connection may take. */
  readonly connectTimeoutMs?: number | undefined;
}

export interface RedisConnection {
  readonly client: RedisClient;
  /** `prefix` + `key`. */
  key(...parts: string[]): string;
  /** Closes the connection (and every duplicate made from it). Idempotent. */
  close(): Promise<void>;
}

export async function connectRedis(opts: RedisOptions): Promise<RedisConnection> {
  const prefix = opts.prefix ?? 'mcpgw:';
  const log = opts.logger.child({ component: 'redis' });
  const client = makeClient(opts.url, opts.connectTimeoutMs ?? 5_000);
  let lastError = '';
  client.on('error', (e: Error) => {
    // One line per distinct failure, not one per reconnect attempt.
    if (e.message === lastError) return;
    lastError = e.message;
    log.warn({ err: e.message }, 'redis connection error');
  });
  client.on('ready', () => {
    if (lastError) log.info({}, 'redis connection restored');
    lastError = '';
  });
  await client.connect();
  let closed = false;
  return {
    client,
    key: (...parts) => prefix + parts.join(':'),
    async close() {
      if (closed) return;
      closed = true;
      await client.close().catch(() => client.destroy());
    },
  };
}
