/**
 * One instance's membership in a cluster on Redis: the connection, its heartbeat, and the seams built
 * on them. `close()` leaves the cluster first (others see this instance gone at once), then closes the
 * connection. When Redis comes back after it went away, what this instance holds is written again
 * (`restore.ts`); the gateway adds what lives outside the seams (its tasks) with `onRestore`.
 */
import type { Logger } from '../../log.js';
import type { CallDirectory } from '../call-directory.js';
import type { Quotas } from '../quotas.js';
import { causeOf, connectRedis, type RedisOptions } from './connection.js';
import { Instances } from './instances.js';
import type { TaskStore } from '../task-store.js';
import type { Fanout } from '../fanout.js';
import { RedisFanout } from './fanout.js';
import type { Homes } from '../homes.js';
import { RedisHomes } from './homes.js';
import { Restorer, type RestoreStep } from './restore.js';
import { RedisCallDirectory, RedisQuotas, RedisNamedEntries, RedisTaskStore } from './seams.js';
import type { NamedEntries } from '../named-entries.js';
import type { RateBuckets } from '../rate-buckets.js';
import { RedisRateBuckets } from './rate-buckets.js';

export interface RedisClusterOptions {
  readonly url: string;
  readonly keyPrefix: string;
  /** How long joining waits for Redis to answer at all (connection.ts). */
  readonly startTimeoutMs?: number | undefined;
  readonly instanceId: string;
  readonly internalUrl?: string | undefined;
  readonly heartbeatMs: number;
  /** How long a directory entry or a round claim may outlive its call (an instance that died holding it). */
  readonly entryTtlMs: number;
  /** How long a home stays claimed unused. */
  readonly homeTtlMs?: number | undefined;
  readonly logger: Logger;
  /** Told each Redis command's duration and outcome (metrics). */
  readonly onCommand?: RedisOptions['onCommand'];
}

export interface RedisCluster {
  readonly directory: CallDirectory;
  readonly quotas: Quotas;
  readonly tasks: TaskStore;
  readonly fanout: Fanout;
  readonly homes: Homes;
  /** The servers `add_server` added, kept for every instance (replicated by fronts/proxy/servers-replicated.ts). */
  readonly addedServers: NamedEntries;
  readonly instances: Instances;
  /** Token buckets of the rate limits (gateway.rateLimits), one script per take. */
  readonly rateBuckets: RateBuckets;
  /** True while Redis answers commands. */
  readonly available: boolean;
  /** Adds what this instance holds outside the seams to what is written again when Redis comes back. */
  onRestore(what: string, step: RestoreStep): void;
  close(): Promise<void>;
}

export async function joinRedisCluster(opts: RedisClusterOptions): Promise<RedisCluster> {
  const redis = await connectRedis({
    url: opts.url,
    prefix: opts.keyPrefix,
    logger: opts.logger,
    onCommand: opts.onCommand,
    startTimeoutMs: opts.startTimeoutMs,
  });
  const log = opts.logger.child({ component: 'cluster' });
  const instances = new Instances(redis, {
    instanceId: opts.instanceId,
    internalUrl: opts.internalUrl,
    heartbeatMs: opts.heartbeatMs,
    onError: (e) => log.warn({ err: causeOf(e) }, 'cluster heartbeat failed (logged once until one succeeds): other instances see this one gone if it lasts'),
    onRecovered: () => log.info({}, 'cluster heartbeat succeeds again'),
    log,
  });
  try {
    await instances.start();
  } catch (e) {
    await redis.close();
    throw e;
  }
  log.info({ instanceId: opts.instanceId }, 'joined the cluster');
  let closing: Promise<void> | undefined;
  const restorer = new Restorer(redis, instances, log);
  const directory = new RedisCallDirectory(redis, instances, opts.instanceId, opts.entryTtlMs, restorer);
  const quotas = new RedisQuotas(redis, instances, opts.instanceId, restorer);
  const homes = new RedisHomes(redis, instances, opts.instanceId, opts.homeTtlMs ?? opts.entryTtlMs);
  restorer.add('calls', () => directory.restore());
  restorer.add('quotaCounters', () => quotas.restore());
  restorer.add('homes', () => homes.restore());
  return {
    directory,
    quotas,
    tasks: new RedisTaskStore(redis),
    fanout: new RedisFanout(redis, opts.instanceId, (e) => log.warn({ err: e.message }, 'an unreadable cluster event was dropped')),
    addedServers: new RedisNamedEntries(redis, 'added-servers'),
    homes,
    instances,
    rateBuckets: new RedisRateBuckets(redis, {
      knownLive: () => instances.knownLive,
      onFallback: (away) =>
        away
          ? log.warn({}, 'rate limits: Redis unreachable, buckets counted on this instance alone (its share of each limit) until it answers')
          : log.info({}, 'rate limits: Redis answers again, buckets shared by the cluster'),
    }),
    get available() {
      return redis.available;
    },
    onRestore: (what, step) => restorer.add(what, step),
    close() {
      closing ??= (async () => {
        restorer.close();
        await restorer.settled();
        await instances.stop();
        await redis.close();
      })();
      return closing;
    },
  };
}
