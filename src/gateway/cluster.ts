/**
 * Joining the cluster (`gateway.cluster`): the seams live in Redis, with this instance's heartbeat. Its
 * leaving is pushed on the closer stack, so a start-up step that fails later leaves again (no heartbeat
 * of a gateway that never served) and `close()` leaves last.
 */
import type { GatewaySettings } from '../config.js';
import type { CallEngine } from '../core/calls/call-engine.js';
import type { TaskRegistry } from '../fronts/tasks/registry.js';
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
    startTimeoutMs: settings.cluster.startTimeoutMs,
    entryTtlMs: settings.callTimeoutMs + settings.requestStateTtlSeconds * 1000,
    homeTtlMs: settings.proxyTools.scopeIdleMs,
    logger,
    ...(metrics.enabled ? { onCommand: (seconds: number, outcome: string) => metrics.redisCommand(seconds, outcome) } : {}),
  });
  closers.push('cluster membership', () => cluster.close());
  return cluster;
}

/**
 * Taken for gone (it stood still, or was cut off: `Instances.onTakenForGone`): the others told the
 * retries of its parked calls that they are gone, and its running tasks failed, so none of those goes
 * on here (a retry would otherwise finish a call its client was told to start again). A call in flight
 * that waits for no one (its client is connected here, or its forward was cut) goes on.
 */
export function endCallsWhenTakenForGone(cluster: RedisCluster, engine: CallEngine, tasks: TaskRegistry, logger: Logger): void {
  cluster.instances.onTakenForGone(() => {
    const why = 'the gateway instance that held it was taken for gone';
    const running = tasks.list().filter((task) => !task.call.done);
    for (const task of running) tasks.cancel(task, why);
    let parked = 0;
    engine.cancelWhere((call) => call.status === 'input_required' && ++parked > 0, new GatewayError('cancelled', why));
    logger.error(
      { tasks: running.length, calls: parked },
      'the other instances took this one for gone (its heartbeat lapsed: it stood still or was cut off): its parked calls and running tasks are ended',
    );
  });
}
