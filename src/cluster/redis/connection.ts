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

/** Logs one line per distinct failure of `client` (not one per reconnect attempt), and one when it is back. */
function logErrorsOnce(client: RedisClient, log: Logger, what: string): void {
  let lastError = '';
  client.on('error', (e: Error) => {
    if (e.message === lastError) return;
    lastError = e.message;
    log.warn({ err: e.message }, `${what} error`);
  });
  client.on('ready', () => {
    if (lastError) log.info({}, `${what} restored`);
    lastError = '';
  });
}

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
  /** The connection that listens on pub/sub channels (a duplicate, made on first use; a connection in subscribe mode sends no other command). */
  subscriber(): Promise<RedisClient>;
  /** Closes the connection (and every duplicate made from it). Idempotent. */
  close(): Promise<void>;
}

export async function connectRedis(opts: RedisOptions): Promise<RedisConnection> {
  const prefix = opts.prefix ?? 'mcpgw:';
  const log = opts.logger.child({ component: 'redis' });
  const client = makeClient(opts.url, opts.connectTimeoutMs ?? 5_000);
  logErrorsOnce(client, log, 'redis connection');
  await client.connect();
  let closed = false;
  let subscriber: Promise<RedisClient> | undefined;
  return {
    client,
    key: (...parts) => prefix + parts.join(':'),
    subscriber() {
      if (closed) return Promise.reject(new Error('the Redis connection is closed'));
      subscriber ??= (async () => {
        const sub = client.duplicate();
        logErrorsOnce(sub, log, 'redis subscriber connection');
        try {
          await sub.connect();
        } catch (e) {
          subscriber = undefined; // the next listener tries again
          try {
            sub.destroy();
          } catch {
            // it never opened
          }
          throw e;
        }
        return sub;
      })();
      return subscriber;
    },
    async close() {
      if (closed) return;
      closed = true;
      const sub = await subscriber?.catch(() => undefined);
      await sub?.close().catch(() => sub.destroy());
      await client.close().catch(() => client.destroy());
    },
  };
}
