/**
 * Joining the cluster (`gateway.cluster`): the seams live in Redis, with this instance's heartbeat. Its
 * leaving is pushed on the closer stack, so a start-up step that fails later leaves again (no heartbeat
 * of a gateway that never served) and `close()` leaves last.
 */
import type { GatewaySettings } from '../config.js';
import type { CallEngine } from '../core/calls/call-engine.js';
import { GatewayError } from '../errors.js';
import { joinRedisCluster, type RedisCluster } from '../cluster/redis/cluster.js';
import type { Logger } from '../log.js';
import { noMetrics, type Metrics } from '../observe/metrics.js';
import type { CloserStack } from '../util/closer-stack.js';

export async function joinCluster(
  settings: Readonly<GatewaySettings>,
  instanceId: string,
  logger: Logger,
  closers: CloserStack,
  metrics: Metrics = noMetrics,
): Promise<RedisCluster | undefined> {
  if (!settings.cluster) return undefined;
  const cluster = await joinRedisCluster({
    url: settings.cluster.redis,
    keyPrefix: settings.cluster.keyPrefix,
    instanceId,
    internalUrl: settings.cluster.internalUrl,
    heartbeatMs: settings.cluster.heartbeatMs,
    entryTtlMs: settings.callTimeoutMs + settings.requestStateTtlSeconds * 1000,
    homeTtlMs: settings.proxyTools.scopeIdleMs,
    logger,
    ...(metrics.enabled ? { onCommand: (seconds: number, outcome: string) => metrics.redisCommand(seconds, outcome) } : {}),
  });
  closers.push('cluster membership', () => cluster.close());
  return cluster;
}

/**
 * Taken for gone (it stood still, or was cut off: `Instances.onTakenForGone`): the others told its
 * calls' clients they are gone, so none of them goes on here (a retry would otherwise finish a call
 * its client was told to start again).
 */
export function endCallsWhenTakenForGone(cluster: RedisCluster, engine: CallEngine, logger: Logger): void {
  cluster.instances.onTakenForGone(() => {
    logger.error(
      { calls: engine.live },
      'the other instances took this one for gone (its heartbeat lapsed: it stood still or was cut off): the calls it held are ended',
    );
    engine.cancelAll(new GatewayError('cancelled', 'the gateway instance that held it was taken for gone'));
  });
}
