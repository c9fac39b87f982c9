/**
 * Composition root: `createGateway(config, deps)` → `{ fetch, ready, drain, close }`.
 * Web-standard: `fetch(Request) → Response`; runtime adapters (src/main.ts on Node) stay outside.
 * Wires the backends (one port per configured server), the call engine, the cluster seams (in-memory
 * unless injected), the fronts and the HTTP routes.
 */
import type { GatewayConfig } from './config.js';
import { silentLogger, type Logger } from './log.js';
import { isClusterUnavailable } from './errors.js';
import { InMemoryCallDirectory, type CallDirectory } from './cluster/call-directory.js';
import { resolveInstanceId } from './cluster/instance-id.js';
import { InMemoryQuotas, type Quotas } from './cluster/quotas.js';
import type { RedisCluster } from './cluster/redis/cluster.js';
import { createShares } from './cluster/shares.js';
import type { BackendPort } from './core/backend/port.js';
import { Catalog } from './core/catalog.js';
import { createAccessPolicy } from './core/access-policy.js';
import { CallEngine } from './core/calls/call-engine.js';
import { createEventBus, type EventBus } from './core/events.js';
import { clusterEventBus } from './core/cluster-events.js';
import { createRequestStateCodec, type RequestStateCodec, type StateKey } from './protocol/request-state.js';
import { withLogTap, type Dialect, type SessionRoute, type SseRoute } from './fronts/dialect.js';
import { createModernDialect } from './fronts/mrtr/dialect.js';
import { ResourceSubscriptions } from './fronts/legacy/resource-subscriptions.js';
import { createLegacySessions } from './fronts/legacy/session-front.js';
import { gatewayCapabilities } from './fronts/mrtr/server-capabilities.js';
import { createDispatch } from './fronts/mrtr/dispatch.js';
import type { RetryRouting } from './fronts/retry-routing.js';
import type { Scopes } from './fronts/proxy/scopes.js';
import { createDraftDialect } from './fronts/tasks/draft-dialect.js';
import { TaskRegistry } from './fronts/tasks/registry.js';
import { createTasksElsewhere } from './fronts/tasks/elsewhere.js';
import { createRemoteTaskIds } from './fronts/tasks/remote.js';
import { createAsyncCompactJwe } from './protocol/compact-jwe.js';
import { createApp } from './http/app.js';
import { InFlight } from './http/in-flight.js';
import type { AppOptions } from './http/app-options.js';
import { serveChannelCall, type ChannelCall } from './http/channel-call.js';
import { createChannelServer, type ChannelServer } from './gateway/channel-server.js';
import { originPolicy } from './http/guards.js';
import { createAuthenticator, oauthSettingsOf } from './auth/authenticator.js';
import { nodeKeyHash } from './auth/key-hash-node.js';
import { resourceMetadata, resourceMetadataPaths } from './auth/resource-metadata.js';
import { CloserStack } from './util/closer-stack.js';
import { background } from './util/background.js';
import { systemClock, type Clock } from './util/clock.js';
import { createBackendFactory } from './gateway/backends.js';
import { endCallsWhenTakenForGone, joinCluster } from './gateway/cluster.js';
import { closeOnce, createDrain } from './gateway/drain.js';
import { createClusterForwarding } from './gateway/forwarding.js';
import { createLifecycle, type Lifecycle } from './gateway/lifecycle.js';
import { PROXY_BACKEND, createProxyTools } from './gateway/proxy-tools.js';
import { checkingReach, readinessOf } from './core/readiness.js';
import { createFronts } from './gateway/fronts.js';
import { createTasks } from './gateway/tasks.js';
import { SERVER_INFO } from './gateway/server-info.js';
import { openAdmin, type AdminSurface } from './gateway/admin-surface.js';
import { metered, countingListens, type FrontLabel } from './gateway/metered.js';
import { tallied } from './gateway/admin.js';
import { createMetrics, noMetrics, type Metrics } from './observe/metrics.js';
import type { RateBuckets } from './cluster/rate-buckets.js';
import type { ChargeRequests } from './fronts/legacy/message-limit.js';
import { gatewayRateLimits } from './gateway/rate-limits.js';

export { SERVER_INFO };

export interface GatewayDeps {
  /** requestState keys: the first seals, all open. */
  readonly stateKeys: readonly StateKey[];
  readonly logger?: Logger;
  /** This instance's id inside requestState (default: config `instanceId`, else kept in `stateDir`, else "single"). */
  readonly instanceId?: string;
  /** Cluster seams (default: in memory, this process only). */
  readonly directory?: CallDirectory;
  readonly quotas?: Quotas;
  /** Rate limits' token buckets (default: in Redis when clustered, else in memory on `clock`). */
  readonly rateBuckets?: RateBuckets;
  /** Time for requestState expiry and parked-call expiry (default: the system clock). */
  readonly clock?: Clock;
  /** Cluster mode: the secret instances sign forwarded requests with (`MCP_GATEWAY_CLUSTER_SECRET`); without it nothing is forwarded. */
  readonly clusterSecret?: string | undefined;
  /** What the gateway counts (default: counted when `gateway.admin` is configured, else nothing). */
  readonly metrics?: Metrics;
  /** The admin page's "drain" (default: `drain()`); the entry point passes its shutdown path. */
  readonly onAdminDrain?: () => void;
}

export interface Gateway {
  /**
   * Serves one HTTP request. `env`: the runtime's bindings for it, as a Hono adapter passes them (on
   * Node, @hono/node-server's `{ incoming, outgoing }`: http/connection.ts reads when the client went away).
   */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /**
   * Cluster mode: the Node server's `connect` listener, where the other instances open their channels
   * to this one (gateway/channel-server.ts; `server.on('connect', gateway.connect)`). Without it they
   * forward over HTTP.
   */
  readonly connect?: ChannelServer['connect'];
  /** Resolves when every backend has made its first connection attempt. */
  readonly ready: Promise<void>;
  readonly backends: readonly BackendPort[];
  /** The call engine (live and retained calls of this instance). */
  readonly engine: CallEngine;
  readonly instanceId: string;
  /** The admin listener's handler (`/metrics`, the admin page), when `gateway.admin` is configured: serve it on its own port. */
  readonly admin: AdminSurface | undefined;
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

/** Observations of one backend announcement by several instances within this long are one event. */
const CLUSTER_EVENT_WINDOW_MS = 1_000;

/**
 * Builds the gateway in named steps: the cluster (when configured), the shared services (requestState
 * codec, quotas, events, backends, call engine, tasks), the proxy tools, the fronts, forwarding, the
 * HTTP app. Every part that must be closed pushes its closer as it is built: a step that fails unwinds
 * what was built before it, and `close()` runs the same list in reverse.
 */
export async function createGateway(config: GatewayConfig, deps: GatewayDeps): Promise<Gateway> {
  const logger = deps.logger ?? silentLogger;
  const settings = config.gateway;
  const clock = deps.clock ?? systemClock;
  const closers = new CloserStack();
  const onCloseError = (what: string, err: unknown): void => logger.warn({ part: what, err: String(err) }, 'a part failed to close');
  const instanceId =
    deps.instanceId ??
    (await resolveInstanceId({
      configured: settings.cluster?.instanceId ?? settings.instanceId,
      stateDir: settings.stateDir,
      cluster: settings.cluster !== undefined,
    }));
  const metrics = tallied(
    deps.metrics ?? (settings.admin ? createMetrics({ principals: settings.admin.principals, backends: config.servers.map((s) => s.name) }) : noMetrics),
  );
  const cluster = await joinCluster(settings, instanceId, logger, closers, metrics);
  const life = createLifecycle();
  try {
    const codec = await createRequestStateCodec({ keys: deps.stateKeys, ttlSeconds: settings.requestStateTtlSeconds, now: clock.now });
    const quotas = deps.quotas ?? cluster?.quotas ?? new InMemoryQuotas();
    const rates = gatewayRateLimits(settings, { cluster, quotas, clock, logger, buckets: deps.rateBuckets });
    // Listen streams and await_activity waits, per principal and in total (counted here when the shared counters fail).
    const shares = createShares(quotas, (e) => logger.warn({ err: e.message }, 'fair-share counters unreachable: counted on this instance alone'));
    const { events, makeBackend, backends } = await createBackends(config, { cluster, logger, metrics, closers });
    const engine = new CallEngine({
      instanceId,
      directory: deps.directory ?? cluster?.directory ?? new InMemoryCallDirectory(),
      callTimeoutMs: settings.callTimeoutMs,
      sampling: settings.sampling,
      log: logger,
      admit: rates.admit,
    });
    closers.push('calls', () => engine.close());
    const tasks = createTasks(config, { instanceId, clock, quotas, cluster, logger });
    closers.push('tasks', () => tasks.registry.close());
    if (cluster) endCallsWhenTakenForGone(cluster, engine, tasks.registry, logger);
    const access = settings.policy && createAccessPolicy(settings.policy);
    const proxy = await createProxyTools({
      settings: settings.proxyTools,
      access,
      configs: config.servers,
      backends,
      makeBackend,
      events,
      engine,
      registry: tasks.registry,
      shares,
      cluster,
      instanceId,
      logger,
      closers,
    });
    if (proxy) tasks.policy.servers.set(PROXY_BACKEND, proxy.taskPolicy);
    const listed: BackendPort[] = !proxy ? [...backends] : settings.proxyTools.mode === 'alone' ? [proxy.backend] : [proxy.backend, ...backends];
    const catalog = new Catalog(listed, settings.toolNameSeparator, logger);
    const { modern, alone, draft, legacy, parked } = createFronts({
      config,
      catalog,
      backends,
      engine,
      events,
      quotas,
      shares,
      codec,
      remote: createRemoteTaskIds(createAsyncCompactJwe(deps.stateKeys)),
      tasks,
      scopes: proxy?.scopes,
      life,
      clock,
      instanceId,
      logger,
      closers,
      metrics,
      access,
      chargeRequests: rates.chargeRequests,
    });
    const forwarding = clusterForwarding({ cluster, secret: deps.clusterSecret, instanceId, codec, engine, life, proxyTools: !!proxy, logger, metrics });
    if (forwarding) closers.push('forwards to other instances', () => forwarding.close());
    const parts = { modern, alone, draft, legacy, life, forwarding, scopes: proxy?.scopes, codec, metrics, backends, logger };
    const { app, listens, serveChannel } = await createHttp(config, { ...parts, chargeRequests: rates.chargeRequests });
    const channels = forwarding && deps.clusterSecret !== undefined ? channelServer(deps.clusterSecret, forwarding, serveChannel, logger, metrics) : undefined;
    if (channels) closers.push('channels from other instances', () => channels.close());
    const close = closeOnce({ life, tasks: tasks.registry, engine, legacyInFlight: () => legacy.inFlight, closers: () => closers.close(onCloseError) });
    const drain = createDrain({ life, engine, tasks: tasks.registry, legacyInFlight: () => legacy.inFlight, cluster, logger, close });
    const admin = openAdmin(config, {
      instanceId,
      metrics,
      engine,
      backends,
      parked,
      registry: tasks.registry,
      legacySessions: () => legacy.size,
      listenStreams: () => listens.open,
      cluster,
      life,
      clock,
      totals: metrics.totals,
      drain: deps.onAdminDrain ?? (() => background('drain the gateway', drain(settings.drainTimeoutMs), logger)),
      logger,
      closers,
    });
    return {
      fetch: (request, env) => Promise.resolve(app.fetch(request, env)),
      ...(channels ? { connect: channels.connect } : {}),
      ready: Promise.all(backends.map((b) => b.start())).then(() => undefined),
      backends,
      engine,
      instanceId,
      admin,
      drain: (deadlineMs = settings.drainTimeoutMs) => drain(deadlineMs),
      close,
    };
  } catch (e) {
    return closers.unwind(e, onCloseError);
  }
}

/** The owner's end of the channels other instances open to this one (gateway/channel-server.ts). */
function channelServer(
  secret: string,
  forwarding: NonNullable<ReturnType<typeof clusterForwarding>>,
  serve: (call: ChannelCall) => Promise<Response>,
  logger: Logger,
  metrics: Metrics,
): ChannelServer {
  return createChannelServer({ secret, forwarding: forwarding.checks, serve, logger, counted: (outcome) => metrics.forward('received', outcome) });
}

/**
 * The HTTP routes over the fronts: each dialect's requests counted in flight and metered, its listen
 * streams counted, and routed to the instance that holds what they continue.
 */
async function createHttp(
  config: GatewayConfig,
  parts: {
    modern: Dialect;
    alone: ReadonlyMap<string, Dialect>;
    draft: Dialect;
    legacy: SessionRoute & SseRoute;
    life: Lifecycle;
    forwarding: ReturnType<typeof clusterForwarding>;
    scopes: Scopes | undefined;
    codec: RequestStateCodec;
    metrics: Metrics;
    backends: readonly BackendPort[];
    logger: Logger;
    chargeRequests: ChargeRequests | undefined;
  },
): Promise<{ app: ReturnType<typeof createApp>; listens: { open: number }; serveChannel: (call: ChannelCall) => Promise<Response> }> {
  const { life, forwarding, metrics, legacy } = parts;
  const settings = config.gateway;
  const listens = { open: 0 };
  const counted = (dialect: Dialect, front: FrontLabel): Dialect =>
    countingListens(
      countedDialect({ ...dialect, handle: metered(front, dialect.handle, metrics) }, life, forwarding?.routing, parts.scopes, parts.codec),
      listens,
      { front, metrics, logger: parts.logger },
    );
  const options: AppOptions = {
    routes: new Map([
      [settings.path, counted(parts.modern, 'mcp')],
      [draftPathOf(settings.path), counted(parts.draft, 'draft')],
      // Session core: each backend alone at <path>/<name>, for an edge handler to list as a server of its own.
      ...[...parts.alone].map(([name, dialect]) => [`${settings.path.replace(/\/+$/, '')}/${name}`, counted(dialect, 'mcp')] as const),
    ]),
    sessions: new Map([[settings.path, legacy]]),
    sse: { path: SSE_PATH, messagesPath: SSE_MESSAGES_PATH, route: legacy },
    policy: originPolicy(settings.host, settings.allowedHosts, settings.allowedOrigins),
    authenticate: createAuthenticator(config.apiKeys, oauthSettingsOf(settings.oauth, config.secrets), parts.logger, nodeKeyHash, config.delegating),
    resourceMetadata: settings.oauth && {
      paths: resourceMetadataPaths([settings.path, draftPathOf(settings.path)]),
      document: resourceMetadata(settings.oauth),
    },
    logger: parts.logger,
    countRefusal: metrics.enabled ? (check, status) => metrics.refused(check, status) : undefined,
    isServing: () => life.state === 'serving',
    forward: forwarding?.forward,
    readiness: checkingReach(parts.backends, readinessOf(parts.backends, life.stopping)),
    chargeRequests: parts.chargeRequests,
    inFlight: new InFlight(settings.maxRequestsInFlightPerPrincipal, settings.maxRequestsInFlightTotal),
  };
  return { app: createApp(options), listens, serveChannel: (call) => serveChannelCall(options, call) };
}

/**
 * The event bus (cluster-wide when clustered) and a backend port per configured server, announcing on
 * it; both closed by `closers`. `makeBackend` builds the port of a server added later.
 */
async function createBackends(
  config: GatewayConfig,
  deps: { cluster: RedisCluster | undefined; logger: Logger; metrics: Metrics; closers: CloserStack },
): Promise<{ events: EventBus; makeBackend: (server: GatewayConfig['servers'][number]) => BackendPort; backends: BackendPort[] }> {
  const { metrics, closers } = deps;
  const factory = createBackendFactory(config, deps.logger, metrics);
  const events = await createEvents(deps.cluster, factory.sameOnEveryInstance, deps.logger);
  closers.push('event bus and listen streams', () => events.close());
  if (metrics.enabled) events.onConnection((change, backend) => metrics.backendConnection(backend, change));
  const makeBackend = (server: GatewayConfig['servers'][number]): BackendPort => factory.make(server, events);
  const backends = config.servers.map(makeBackend);
  closers.push('backends', async () => {
    await Promise.all(backends.map((b) => b.close()));
  });
  return { events, makeBackend, backends };
}

/** One instance: the in-memory bus. Several: a backend's announcements reach every instance's listeners, once. */
async function createEvents(cluster: RedisCluster | undefined, sameOnEveryInstance: (backend: string) => boolean, logger: Logger): Promise<EventBus> {
  if (!cluster) return createEventBus();
  return clusterEventBus(createEventBus(), cluster.fanout, {
    windowMs: CLUSTER_EVENT_WINDOW_MS,
    sameOnEveryInstance,
    onError: (e) => logger.warn({ err: e.message }, 'an event could not be sent to the other instances; delivered here only'),
  });
}

/** Forwarding between instances needs the cluster and its secret; without the secret nothing is forwarded (and it says so). */
function clusterForwarding(
  deps: Omit<Parameters<typeof createClusterForwarding>[0], 'cluster' | 'secret'> & { cluster: RedisCluster | undefined; secret: string | undefined },
): ReturnType<typeof createClusterForwarding> | undefined {
  const { cluster, secret } = deps;
  if (cluster && secret) return createClusterForwarding({ ...deps, cluster, secret });
  if (cluster) {
    deps.logger.warn(
      {},
      'MCP_GATEWAY_CLUSTER_SECRET is not set: retries and legacy session requests that land on an instance that does not hold their call or session are not forwarded',
    );
  }
  return undefined;
}

/**
 * A dialect whose requests count as in flight (a drain waits for them), routed to the instance that
 * holds what they continue, and whose stateless calls' backend log lines go to the principal's proxy
 * scope (read by get_logs). A retry's trace is the one its requestState sealed (http/request-span.ts).
 */
function countedDialect(dialect: Dialect, life: Lifecycle, routing: RetryRouting | undefined, scopes: Scopes | undefined, codec: RequestStateCodec): Dialect {
  return {
    ...dialect,
    ...(routing ? { ownerOf: routing } : {}),
    traceOf: (request, principal) => codec.sealedTrace(request.params['requestState'], principal),
    continuesParked: async (state, principal) => (await codec.sealedOwner(state, principal)) !== undefined,
    handle: async (request, ctx) => {
      const leave = life.enter();
      try {
        return await dialect.handle(request, scopes ? withLogTap(ctx, ctx.logTap ?? scopes.logTap(ctx.principal)) : ctx);
      } finally {
        leave();
      }
    },
  };
}
