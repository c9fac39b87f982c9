/**
 * Composition root: `createGateway(config, deps)` → `{ fetch, ready, drain, close }`.
 * Web-standard: `fetch(Request) → Response`; runtime adapters (src/main.ts on Node) stay outside.
 * Wires the backends (one port per configured server), the call engine, the cluster seams (in-memory
 * unless injected), the fronts and the HTTP routes.
 */
import type { GatewayConfig, ServerConfig } from './config.js';
import { silentLogger, type Logger } from './log.js';
import { isClusterUnavailable } from './errors.js';
import { InMemoryCallDirectory, type CallDirectory } from './cluster/call-directory.js';
import { resolveInstanceId } from './cluster/instance-id.js';
import { InMemoryQuotas, type Quotas } from './cluster/quotas.js';
import { createShares } from './cluster/shares.js';
import { InMemoryRoundClaims, type RoundClaims } from './cluster/round-claims.js';
import { joinRedisCluster } from './cluster/redis/cluster.js';
import { createForwarder } from './cluster/forwarder.js';
import { createForwardWatch } from './cluster/forward-watch.js';
import { untilEnd } from './util/stream-end.js';
import { createRetryRouting, type RetryRouting } from './fronts/retry-routing.js';
import { LegacyBackend } from './core/backend/legacy-backend.js';
import { ModernBackend } from './core/backend/modern-backend.js';
import type { BackendPort } from './core/backend/port.js';
import { Catalog } from './core/catalog.js';
import { CallEngine } from './core/calls/call-engine.js';
import { createEventBus, type ConnectionChange, type EventBus } from './core/events.js';
import { clusterEventBus } from './core/cluster-events.js';
import { createRequestStateCodec, type StateKey } from './protocol/request-state.js';
import type { Dialect } from './fronts/dialect.js';
import { createModernDialect } from './fronts/mrtr/dialect.js';
import { ResourceSubscriptions } from './fronts/legacy/resource-subscriptions.js';
import { createLegacySessions } from './fronts/legacy/session-front.js';
import { createSessionRouting } from './fronts/legacy/session-ids.js';
import { gatewayCapabilities } from './fronts/mrtr/capabilities.js';
import { createDispatch } from './fronts/mrtr/dispatch.js';
import { createDraftDialect } from './fronts/tasks/draft-dialect.js';
import { TaskRegistry } from './fronts/tasks/registry.js';
import { createTasksElsewhere } from './fronts/tasks/elsewhere.js';
import { createRemoteTaskIds } from './fronts/tasks/remote.js';
import { ProxyBackend } from './fronts/proxy/proxy-backend.js';
import { Scopes } from './fronts/proxy/scopes.js';
import { ProxyServers } from './fronts/proxy/servers.js';
import { whereIs } from './fronts/proxy/server-info.js';
import { TOOL_SCHEMAS, isProxyTool } from './fronts/proxy/tools.js';
import { shareServers } from './fronts/proxy/servers-shared.js';
import { WorkTracker } from './fronts/proxy/work.js';
import { createApp, type Forwarding } from './http/app.js';
import { createAuthenticator, originPolicy } from './http/guards.js';
import { sleep } from './util/abort.js';
import { systemClock, type Clock } from './util/clock.js';
import { VERSION } from './version.js';

export interface GatewayDeps {
  /** requestState keys: the first seals, all open. */
  readonly stateKeys: readonly StateKey[];
  readonly logger?: Logger;
  /** This instance's id inside requestState (default: config `instanceId`, else kept in `stateDir`, else "single"). */
  readonly instanceId?: string;
  /** Cluster seams (default: in memory, this process only). */
  readonly directory?: CallDirectory;
  readonly claims?: RoundClaims;
  readonly quotas?: Quotas;
  /** Time for requestState expiry and parked-call expiry (default: the system clock). */
  readonly clock?: Clock;
  /** Cluster mode: the secret instances sign forwarded requests with (`MCP_GATEWAY_CLUSTER_SECRET`); without it nothing is forwarded. */
  readonly clusterSecret?: string | undefined;
}

export interface Gateway {
  /** Serves one HTTP request. */
  fetch(request: Request): Promise<Response>;
  /** Resolves when every backend has made its first connection attempt. */
  readonly ready: Promise<void>;
  readonly backends: readonly BackendPort[];
  /** The call engine (live and retained calls of this instance). */
  readonly engine: CallEngine;
  readonly instanceId: string;
  /**
   * Graceful shutdown: new work is refused (503 + Retry-After) while calls in flight finish and parked
   * calls may still be resumed, until every call has ended or `deadlineMs` (default: config
   * `drainTimeoutMs`) has passed; then `close()`.
   */
  drain(deadlineMs?: number): Promise<void>;
  /** Cancels every call (waiting clients are told the gateway is closing), ends listen streams, closes backends; resolves when backend processes are gone. Idempotent. */
  close(): Promise<void>;
}

/** The 2024-11-05 HTTP+SSE transport for the oldest clients: the event stream and where messages are POSTed. */
export const SSE_PATH = '/sse';
export const SSE_MESSAGES_PATH = '/messages';

/** Where the draft SEP-2322 tasks dialect is served: beside the 2026-07-28 endpoint (`/mcp` → `/mcp/draft`). */
export function draftPathOf(path: string): string {
  return `${path.replace(/\/+$/, '')}/draft`;
}

export const SERVER_INFO = { name: 'mcp-mrtr-gateway', version: VERSION } as const;

/** The proxy tools' backend name: not a valid server name, so no configured server can take it. */
const PROXY_BACKEND = '~proxy';

/** Observations of one backend announcement by several instances within this long are one event. */
const CLUSTER_EVENT_WINDOW_MS = 1_000;

/** How often a drain looks again for requests still being handled (calls are waited for directly). */
const DRAIN_POLL_MS = 20;

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

function createBackend(server: ServerConfig, config: GatewayConfig, events: EventBus, logger: Logger): BackendPort {
  const common = { settings: config.gateway, clientInfo: SERVER_INFO, logger };
  if (server.kind === 'http' && server.protocol === '2026-07-28') return new ModernBackend({ server, ...common });
  const maxSessions = server.maxSessions ?? config.gateway.maxSessionsPerBackend;
  // Fair share: with several principals, none may hold more than half of a backend's sessions.
  const principals = new Set(config.apiKeys.values()).size;
  const share = config.gateway.maxSessionsPerPrincipal ?? (principals > 1 ? Math.max(1, Math.ceil(maxSessions / 2)) : undefined);
  return new LegacyBackend({
    server,
    ...common,
    maxSessionsPerPrincipal: share,
    onListChanged: (kind) => events.emitListChanged(kind, server.name),
    onResourceUpdated: (uri) => events.emitResourceUpdated(uri, server.name),
    onConnection: (change) => events.emitConnection(change, server.name),
  });
}

export async function createGateway(config: GatewayConfig, deps: GatewayDeps): Promise<Gateway> {
  const logger = deps.logger ?? silentLogger;
  const settings = config.gateway;
  const instanceId =
    deps.instanceId ??
    (await resolveInstanceId({
      configured: settings.cluster?.instanceId ?? settings.instanceId,
      stateDir: settings.stateDir,
      cluster: settings.cluster !== undefined,
    }));
  // Several instances: the seams live in Redis (unless a test injects its own), with this instance's heartbeat.
  const cluster = settings.cluster
    ? await joinRedisCluster({
        url: settings.cluster.redis,
        keyPrefix: settings.cluster.keyPrefix,
        instanceId,
        internalUrl: settings.cluster.internalUrl,
        heartbeatMs: settings.cluster.heartbeatMs,
        entryTtlMs: settings.callTimeoutMs + settings.requestStateTtlSeconds * 1000,
        homeTtlMs: settings.proxyTools.scopeIdleMs,
        logger,
      })
    : undefined;
  // A start-up step that fails after joining leaves the cluster again (no heartbeat of a gateway that never served).
  const leaving = async (e: unknown): Promise<never> => {
    await cluster?.close().catch(() => undefined);
    throw e;
  };
  const clock = deps.clock ?? systemClock;
  const codec = await createRequestStateCodec({ keys: deps.stateKeys, ttlSeconds: settings.requestStateTtlSeconds, now: clock.now }).catch(leaving);
  const quotas = deps.quotas ?? cluster?.quotas ?? new InMemoryQuotas();
  // Listen streams and await_activity waits, per principal and in total (counted here when the shared counters fail).
  const shares = createShares(quotas, (e) => logger.warn({ err: e.message }, 'fair-share counters unreachable: counted on this instance alone'));
  // Several instances: a backend's announcements reach every instance's listeners, once. Backends
  // reached by URL are the same server for every instance; a stdio backend is each instance's own.
  const sharedBackends = new Set<string>();
  const makeBackend = (server: ServerConfig): BackendPort => {
    if (server.kind === 'http') sharedBackends.add(server.name);
    else sharedBackends.delete(server.name);
    return createBackend(server, config, events, logger);
  };
  const events = cluster
    ? await clusterEventBus(createEventBus(), cluster.fanout, {
        windowMs: CLUSTER_EVENT_WINDOW_MS,
        shared: (backend) => sharedBackends.has(backend),
        onError: (e) => logger.warn({ err: e.message }, 'an event could not be sent to the other instances; delivered here only'),
      }).catch(leaving)
    : createEventBus();
  const backends = config.servers.map(makeBackend);
  const engine = new CallEngine({
    instanceId,
    directory: deps.directory ?? cluster?.directory ?? new InMemoryCallDirectory(),
    callTimeoutMs: settings.callTimeoutMs,
    sampling: settings.sampling,
    log: logger,
  });
  const stamp = { serverInfo: SERVER_INFO, cacheTtlMs: settings.cacheTtlMs, cacheScope: settings.cacheScope };
  let state: 'serving' | 'draining' | 'closed' = 'serving';
  const draining = (): boolean => state !== 'serving';
  // A task cannot outlive its backend call's hard limit: its ttl promises no more than callTimeoutMs.
  const taskRegistry = new TaskRegistry({
    instanceId,
    clock,
    quotas,
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
  cluster?.onRestore('tasks', () => taskRegistry.rewrite());
  const tasksElsewhere = cluster
    ? createTasksElsewhere({
        store: cluster.tasks,
        instanceId,
        alive: (id) => cluster.instances.alive(id),
        checkEveryMs: settings.cluster!.heartbeatMs,
      })
    : undefined;
  const taskPolicy = { promoteAfterMs: settings.tasks.promoteAfterMs, servers: new Map(config.servers.map((s) => [s.name, s.tasks])) };
  // The proxy tools and their state scopes (a principal, a workspace, a legacy session): kept only when the tools are on.
  const proxySettings = settings.proxyTools;
  let scopes: Scopes | undefined;
  let tracker: WorkTracker | undefined;
  let offScopeNotices = (): void => undefined;
  let stopSharing = async (): Promise<void> => undefined;
  let proxy: ProxyBackend | undefined;
  if (proxySettings.enabled) {
    scopes = new Scopes({ ...proxySettings, idleMs: proxySettings.scopeIdleMs, logger });
    const all = scopes;
    const offLists = events.onListChanged((kind, backend) => all.notifyAll(backend, `notifications/${kind}/list_changed`));
    const offConnections = events.onConnection(connectionEvents(all));
    offScopeNotices = () => {
      offLists();
      offConnections();
    };
    const servers = new ProxyServers(
      config.servers.map((c, i) => ({ config: c, backend: backends[i]! })),
      makeBackend,
      proxySettings.addServer,
    );
    tracker = new WorkTracker({ registry: taskRegistry, serverGone: (name) => servers.get(name) === undefined });
    // Several instances: what add_server added on one is added on every one.
    if (cluster && servers.canAdd) {
      stopSharing = await shareServers(servers, {
        entries: cluster.addedServers,
        fanout: cluster.fanout,
        instanceId,
        logger,
        onChange: (change, name) => {
          const entry = servers.get(name);
          if (change === 'added' && entry) all.announceAdded(name, { name, ...whereIs(entry.config) });
          else if (change === 'removed') all.announceRemoved(name, { name });
        },
      }).catch(leaving);
    }
    proxy = new ProxyBackend({
      name: PROXY_BACKEND,
      engine,
      registry: taskRegistry,
      scopes,
      tracker,
      servers,
      settings: proxySettings,
      logger,
      shares,
    });
    // The proxy tools make their own tasks (execute_tool past timeout_ms): never promoted as calls themselves.
    taskPolicy.servers.set(PROXY_BACKEND, { tools: Object.fromEntries(Object.keys(TOOL_SCHEMAS).map((t) => [t, { support: 'forbidden' as const }])) });
  }
  const listed: BackendPort[] = !proxy ? [...backends] : proxySettings.mode === 'alone' ? [proxy] : [proxy, ...backends];
  const catalog = new Catalog(listed, settings.toolNameSeparator, logger);

  const handle = createDispatch({
    catalog,
    engine,
    claims: deps.claims ?? cluster?.claims ?? new InMemoryRoundClaims(),
    quotas,
    codec,
    stamp,
    instructions: settings.instructions,
    draining,
    clock,
    log: logger,
    tasks: {
      registry: taskRegistry,
      policy: taskPolicy,
      remote: createRemoteTaskIds(deps.stateKeys),
      elsewhere: tasksElsewhere?.gone,
    },
    options: {
      coalesceMs: settings.coalesceMs,
      parkTtlMs: settings.requestStateTtlSeconds * 1000,
      maxParkedPerPrincipal: settings.maxParkedPerPrincipal,
      maxParkedTotal: settings.maxParkedTotal,
    },
  });
  const modern = createModernDialect({
    handle,
    draining,
    listen: {
      catalog,
      events,
      stamp,
      quotas,
      shares,
      logger,
      maxPerPrincipal: settings.maxListenPerPrincipal,
      maxTotal: settings.maxListenTotal,
      tasks: taskRegistry,
      elsewhere: tasksElsewhere,
    },
  });
  const draft = createDraftDialect({ handle, registry: taskRegistry, stamp });
  const subscriptions = new ResourceSubscriptions({
    resolve: async (uri) => (await catalog.resolveResource(uri))?.backend,
    events,
    timeoutMs: 30_000,
  });
  const legacy = createLegacySessions({
    handle,
    instanceId,
    events,
    subscriptions,
    subscribable: async () =>
      (await Promise.all(backends.map((b) => b.capabilities()))).some((c) => (c?.['resources'] as { subscribe?: unknown } | undefined)?.subscribe === true),
    capabilities: () => gatewayCapabilities(catalog),
    serverInfo: SERVER_INFO,
    instructions: settings.instructions,
    logger,
    idleMs: settings.legacySessionIdleMs,
    maxSessions: settings.maxLegacySessions,
    maxSessionsPerPrincipal: settings.maxLegacySessionsPerPrincipal,
    scopes,
    inputTimeoutMs: settings.requestStateTtlSeconds * 1000,
  });
  // Requests being handled right now (a list, a route being resolved): drain waits for them as well
  // as for live calls.
  let inFlight = 0;
  // Several instances: a retry or task request for what another live instance holds is forwarded there.
  // Requests for a legacy session another live instance holds go there too.
  let forward: Forwarding | undefined;
  let routing: RetryRouting | undefined;
  if (cluster && deps.clusterSecret) {
    const members = cluster.instances;
    const alive = (id: string): Promise<boolean> => members.alive(id);
    const anyServing = (): Promise<string | undefined> => members.anyServing().catch(() => undefined);
    const forwarder = createForwarder({
      secret: deps.clusterSecret,
      urlOf: async (id) => (await members.urlOf(id)) || undefined,
      nonces: cluster.nonces,
      instanceId,
    });
    // An instance known dead answers nothing more: what was forwarded to it is answered here at once.
    const watch = createForwardWatch();
    members.onGone((id) => {
      const waiting = watch.waiting(id);
      if (waiting > 0) logger.warn({ instance: id, requests: waiting }, 'an instance is gone: the requests forwarded to it are answered here');
      watch.gone(id);
    });
    // An answer streaming back through this instance counts as a request in flight (drain waits for it),
    // but a legacy session's GET stream: a client resumes it elsewhere with Last-Event-ID. An answer cut
    // by its owner (it died) ends here cleanly, with a log line rather than a stack.
    forward = {
      ...forwarder,
      sessionOwner: createSessionRouting({ instanceId, alive, draining, anyServing }),
      async send(owner: string, target: string, req: Request, body?: string) {
        const counted = req.method !== 'GET';
        if (counted) inFlight++;
        // Aborted with the client, or as soon as the owner is known dead (it may never answer).
        const watched = watch.track(owner, req.signal);
        const ended = (): void => {
          if (counted) inFlight--;
          watched.dispose();
        };
        const sent = new Request(req.url, { method: req.method, headers: req.headers, signal: watched.signal });
        const res = await forwarder.send(owner, target, sent, body).catch((e: unknown) => {
          ended();
          throw e;
        });
        if (!res) logger.warn({ instance: owner }, 'the instance that holds this request could not be reached: served here');
        if (!res?.body) {
          ended();
          return res;
        }
        const stream = untilEnd(res.body, (error) => {
          ended();
          if (error) logger.warn({ instance: owner, err: error.message }, 'a forwarded answer was cut by the instance that sent it');
        });
        return new Response(stream, { status: res.status, headers: res.headers });
      },
    };
    routing = createRetryRouting({
      instanceId,
      codec,
      ownerOf: (id) => engine.ownerOf(id),
      alive,
      draining,
      anyServing,
      ...(proxy
        ? { proxy: { isTool: isProxyTool, homeOf: (principal: string, claimant: string | undefined) => cluster.homes.homeOf(principal, claimant) } }
        : {}),
    });
  } else if (cluster) {
    logger.warn(
      {},
      'MCP_GATEWAY_CLUSTER_SECRET is not set: retries and legacy session requests that land on an instance that does not hold their call or session are not forwarded',
    );
  }
  const tracked = (dialect: Dialect): Dialect => ({
    ...dialect,
    ...(routing ? { holder: routing } : {}),
    handle: async (request, ctx) => {
      inFlight++;
      try {
        // Backend log lines of a stateless client's calls go to its principal's scope (read by get_logs).
        return await dialect.handle(request, scopes ? { ...ctx, logTap: ctx.logTap ?? scopes.logTap(ctx.principal) } : ctx);
      } finally {
        inFlight--;
      }
    },
  });
  const app = createApp({
    routes: new Map([
      [settings.path, tracked(modern)],
      [draftPathOf(settings.path), tracked(draft)],
    ]),
    sessions: new Map([[settings.path, legacy]]),
    sse: { path: SSE_PATH, messagesPath: SSE_MESSAGES_PATH, route: legacy },
    policy: originPolicy(settings.host, settings.allowedHosts, settings.allowedOrigins),
    authenticate: await createAuthenticator(config.apiKeys).catch(leaving),
    logger,
    isServing: () => state === 'serving',
    forward,
    readiness: () => {
      const health = backends.map((b) => {
        const { stderr: _stderr, ...h } = b.health(); // stderr stays in the log, never in a response
        return h;
      });
      const upCount = health.filter((h) => h.state === 'up').length;
      const status = state !== 'serving' ? 'closing' : upCount === health.length ? 'ready' : upCount > 0 ? 'degraded' : 'unavailable';
      return { ready: status === 'ready' || status === 'degraded', body: { status, backends: health } };
    },
  });
  const ready = Promise.all(backends.map((b) => b.start())).then(() => undefined);
  let closing: Promise<void> | undefined;

  const close = (): Promise<void> => {
    closing ??= (async () => {
      state = 'closed';
      events.close();
      offScopeNotices();
      await stopSharing();
      await legacy.close();
      subscriptions.close();
      await taskRegistry.close();
      await engine.close();
      tracker?.close();
      scopes?.close();
      await Promise.all([...backends, ...(proxy ? [proxy] : [])].map((b) => b.close()));
      await cluster?.close();
    })();
    return closing;
  };

  return {
    fetch: async (request) => app.fetch(request),
    ready,
    backends,
    engine,
    instanceId,
    async drain(deadlineMs = settings.drainTimeoutMs) {
      if (state === 'serving') {
        state = 'draining';
        logger.info(
          { live: engine.live, deadlineMs },
          cluster
            ? 'draining: new requests go to other instances of the cluster (or are refused); calls in flight may finish'
            : 'draining: new requests are refused; calls in flight may finish',
        );
        // In a cluster, the others stop sending this instance new work, and new work that reaches it is
        // forwarded to them; what it holds (parked calls, tasks) stays and finishes or fails here.
        await cluster?.instances.markDraining().catch((e: unknown) => logger.warn({ err: (e as Error).message }, 'could not mark this instance draining'));
      }
      const deadline = AbortSignal.timeout(Math.max(0, deadlineMs));
      try {
        // Calls, requests being handled, and legacy clients' requests until their answer went out.
        while (engine.live > 0 || inFlight > 0 || legacy.pending > 0) {
          if (engine.live > 0) await engine.whenIdle(deadline);
          else await sleep(DRAIN_POLL_MS, deadline);
        }
      } catch {
        logger.warn({ live: engine.live, inFlight, legacyPending: legacy.pending }, 'drain deadline passed: cancelling the calls left');
      }
      await close();
      logger.info({}, 'drained: closed');
    },
    close,
  };
}
