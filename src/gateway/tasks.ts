/**
 * The gateway's tasks: the registry (a task cannot outlive its backend call's hard limit: its ttl
 * promises no more than callTimeoutMs), the promotion policy per server and tool, and in a cluster the
 * last written state of tasks whose instance is gone.
 */
import type { GatewayConfig, ServerConfig } from '../config.js';
import type { Quotas } from '../cluster/quotas.js';
import type { RedisCluster } from '../cluster/redis/cluster.js';
import { isClusterUnavailable } from '../errors.js';
import { createTasksElsewhere } from '../fronts/tasks/elsewhere.js';
import { TaskRegistry } from '../fronts/tasks/registry.js';
import type { Logger } from '../log.js';
import type { Clock } from '../util/clock.js';

export interface GatewayTasks {
  readonly registry: TaskRegistry;
  /** Per server (the proxy tools add theirs): when a tool's call becomes a task. */
  readonly policy: { readonly promoteAfterMs: number; readonly servers: Map<string, ServerConfig['tasks']> };
  readonly elsewhere: ReturnType<typeof createTasksElsewhere> | undefined;
}

export function createTasks(
  config: GatewayConfig,
  deps: { instanceId: string; clock: Clock; quotas: Quotas; cluster: RedisCluster | undefined; logger: Logger },
): GatewayTasks {
  const settings = config.gateway;
  const { cluster, logger } = deps;
  const registry = new TaskRegistry({
    instanceId: deps.instanceId,
    clock: deps.clock,
    quotas: deps.quotas,
    settings: { ...settings.tasks, ttlMs: Math.min(settings.tasks.ttlMs, settings.callTimeoutMs) },
    store: cluster?.tasks,
    // While Redis is away every task change fails to be written: its return writes them all again.
    onStoreError: (e) =>
      isClusterUnavailable(e)
        ? logger.debug({}, 'a task could not be written to the cluster store while Redis is away')
        : logger.warn({ err: e.message }, 'a task could not be written to the cluster store'),
    log: logger,
  });
  // Redis came back (maybe empty): this instance's tasks are written again with its calls and homes.
  cluster?.onRestore('tasks', () => registry.rewrite());
  const elsewhere = cluster
    ? createTasksElsewhere({
        store: cluster.tasks,
        instanceId: deps.instanceId,
        alive: (id) => cluster.instances.alive(id),
        checkEveryMs: settings.cluster!.heartbeatMs,
      })
    : undefined;
  const policy = { promoteAfterMs: settings.tasks.promoteAfterMs, servers: new Map(config.servers.map((s) => [s.name, s.tasks])) };
  return { registry, policy, elsewhere };
}
