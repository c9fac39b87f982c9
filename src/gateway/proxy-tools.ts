/**
 * The proxy tools (`gateway.proxyTools.enabled`) and their state scopes (a principal, a workspace, a
 * legacy session): the scopes hear the backends' list and connection changes, servers added at run time
 * are replicated across a cluster, and the proxy backend serves the tools. Each part pushes its closer.
 */
import type { GatewaySettings, ServerConfig } from '../config.js';
import type { RedisCluster } from '../cluster/redis/cluster.js';
import type { Shares } from '../cluster/shares.js';
import type { AccessPolicy } from '../core/access-policy.js';
import type { BackendPort } from '../core/backend/port.js';
import type { CallEngine } from '../core/calls/call-engine.js';
import type { ConnectionChange, EventBus } from '../core/events.js';
import { ProxyBackend } from '../fronts/proxy/proxy-backend.js';
import { Scopes } from '../fronts/proxy/scopes.js';
import { replicateServers } from '../fronts/proxy/servers-replicated.js';
import { ProxyServers } from '../fronts/proxy/servers.js';
import { whereIs } from '../fronts/proxy/server-info.js';
import { TOOL_SCHEMAS } from '../fronts/proxy/tools.js';
import { WorkTracker } from '../fronts/proxy/work.js';
import type { TaskRegistry } from '../fronts/tasks/registry.js';
import type { Logger } from '../log.js';
import type { CloserStack } from '../util/closer-stack.js';

/** The proxy tools' backend name: not a valid server name, so no configured server can take it. */
export const PROXY_BACKEND = '~proxy';

export interface ProxyToolsDeps {
  readonly settings: Readonly<GatewaySettings>['proxyTools'];
  /** The configured servers and their backends, index for index. */
  readonly configs: readonly ServerConfig[];
  readonly backends: readonly BackendPort[];
  readonly makeBackend: (server: ServerConfig) => BackendPort;
  readonly events: EventBus;
  readonly engine: CallEngine;
  readonly registry: TaskRegistry;
  readonly shares: Shares;
  /** Who may use what (`gateway.policy`). */
  readonly access?: AccessPolicy | undefined;
  readonly cluster: RedisCluster | undefined;
  readonly instanceId: string;
  readonly logger: Logger;
  readonly closers: CloserStack;
}

export interface ProxyTools {
  readonly scopes: Scopes;
  readonly backend: ProxyBackend;
  /** Task policy of the proxy tools: they make their own tasks (execute_tool past timeout_ms), never promoted as calls. */
  readonly taskPolicy: ServerConfig['tasks'];
}

export async function createProxyTools(deps: ProxyToolsDeps): Promise<ProxyTools | undefined> {
  const { settings, events, closers, logger } = deps;
  if (!settings.enabled) return undefined;
  const scopes = new Scopes({ ...settings, idleMs: settings.scopeIdleMs, logger });
  closers.push('proxy-tools scopes', () => scopes.close());
  const offLists = events.onListChanged((kind, backend) => scopes.notifyAll(backend, `notifications/${kind}/list_changed`));
  const offConnections = events.onConnection(connectionEvents(scopes));
  closers.push('proxy-tools event taps', () => {
    offLists();
    offConnections();
  });
  const servers = new ProxyServers(
    deps.configs.map((config, i) => ({ config, backend: deps.backends[i]! })),
    deps.makeBackend,
    settings.addServer,
  );
  const tracker = new WorkTracker({ registry: deps.registry, serverGone: (name) => servers.get(name) === undefined });
  closers.push('proxy-tools work tracker', () => tracker.close());
  // Several instances: what add_server added on one is added on every one.
  if (deps.cluster && servers.canAdd) {
    const stopReplicating = await replicateServers(servers, {
      entries: deps.cluster.addedServers,
      fanout: deps.cluster.fanout,
      instanceId: deps.instanceId,
      logger,
      onChange: (change, name) => {
        const entry = servers.get(name);
        if (change === 'added' && entry) scopes.announceAdded(name, { name, ...whereIs(entry.config) });
        else if (change === 'removed') scopes.announceRemoved(name, { name });
      },
    });
    closers.push('added-server replication', stopReplicating);
  }
  const backend = new ProxyBackend({
    name: PROXY_BACKEND,
    engine: deps.engine,
    registry: deps.registry,
    scopes,
    tracker,
    servers,
    settings,
    logger,
    shares: deps.shares,
    access: deps.access,
  });
  closers.push('proxy backend and added servers', () => backend.close());
  const taskPolicy = { tools: Object.fromEntries(Object.keys(TOOL_SCHEMAS).map((t) => [t, { support: 'forbidden' as const }])) };
  return { scopes, backend, taskPolicy };
}

/**
 * Backend connection changes as the proxy tools' events (seed 001, reconnection): the first connection
 * is `server_connected`; a lost one `server_disconnected`; the next `server_reconnected`, on a new
 * backend session: what was in flight on a session that ended (its calls, their pending input, working
 * tasks) has failed, calls on sessions that still work go on, and its lists are fetched again.
 */
function connectionEvents(scopes: Scopes): (change: ConnectionChange, backend: string) => void {
  const lost = new Set<string>();
  const seen = new Set<string>();
  return (change, backend) => {
    if (change === 'lost') {
      lost.add(backend);
      scopes.broadcast('server_disconnected', backend, { server: backend });
      return;
    }
    const again = lost.delete(backend) || seen.has(backend);
    seen.add(backend);
    scopes.broadcast(again ? 'server_reconnected' : 'server_connected', backend, {
      server: backend,
      ...(again
        ? {
            newSession: true,
            note: 'The connection to the backend was made again. Calls on a session that ended (a restarted process, a closed connection) failed with their pending requests; calls on sessions that still work go on.',
          }
        : {}),
    });
  };
}
