/**
 * The edge handler's composition root: the 2026-07-28 front (MRTR rounds, SEP-2243 headers, lists,
 * discover, listen, a backend's own tasks passed through) over 2026-07-28 backends reached by `fetch`,
 * with nothing held between requests. A backend's `input_required` comes back with its requestState
 * sealed inside the edge's own (Web Crypto, the same tokens as the Node gateway's), so a retry may land
 * on any edge instance that has the keys. No call is parked and none becomes a task of the edge's own:
 * the session core behind it (the Node gateway) parks and promotes. Only Web APIs on this path (checked
 * by test/architecture.test.ts and by bundling for a browser-like platform).
 */
import { createAuthenticator, oauthSettingsOf } from '../auth/authenticator.js';
import { resourceMetadata, resourceMetadataPaths } from '../auth/resource-metadata.js';
import { createClientCredentials } from '../auth/client-credentials.js';
import { InMemoryCallDirectory } from '../cluster/call-directory.js';
import { InMemoryQuotas } from '../cluster/quotas.js';
import { createShares } from '../cluster/shares.js';
import type { GatewayConfig, HttpServerConfig } from '../config.js';
import { createAccessPolicy } from '../core/access-policy.js';
import type { BackendCredentials } from '../core/backend/backend-credentials.js';
import { ModernBackend } from '../core/backend/modern-backend.js';
import { CallEngine } from '../core/calls/call-engine.js';
import { Catalog } from '../core/catalog.js';
import { createEventBus } from '../core/events.js';
import { createDispatch } from '../fronts/mrtr/dispatch.js';
import { roundsOptionsOf } from '../fronts/mrtr/rounds.js';
import { createModernDialect } from '../fronts/mrtr/dialect.js';
import { TaskRegistry } from '../fronts/tasks/registry.js';
import { createRemoteTaskIds } from '../fronts/tasks/remote.js';
import { createApp } from '../http/app.js';
import { InFlight } from '../http/in-flight.js';
import { originPolicy } from '../http/guards.js';
import { silentLogger, type Logger } from '../log.js';
import { createWebCompactJwe } from '../protocol/compact-jwe-web.js';
import { createWebRequestStateCodec } from '../protocol/request-state-web.js';
import type { StateKey } from '../protocol/state-codec.js';
import { checkingReach, readinessOf } from '../core/readiness.js';
import { systemClock, type Clock } from '../util/clock.js';
import { VERSION } from '../version.js';

/** How the edge names itself to clients and to its backends. */
export const EDGE_INFO = { name: 'mcp-mrtr-gateway-edge', version: VERSION } as const;
/** The edge's instance id in its requestState: any edge instance opens any other's (nothing is parked). */
const EDGE_INSTANCE = 'edge';

export interface EdgeGateway {
  fetch(request: Request): Promise<Response>;
  /** Cancels what is in flight and closes the backends' clients. */
  close(): Promise<void>;
}

export interface EdgeDeps {
  readonly stateKeys: readonly StateKey[];
  readonly logger?: Logger | undefined;
  readonly clock?: Clock | undefined;
}

/** Builds the edge handler for `config` (checked by edgeConfigOf: 2026-07-28 servers by URL only). */
export async function createEdgeGateway(config: GatewayConfig, deps: EdgeDeps): Promise<EdgeGateway> {
  const logger = deps.logger ?? silentLogger;
  const clock = deps.clock ?? systemClock;
  const settings = config.gateway;
  const backends = config.servers.map((server) => {
    if (server.kind !== 'http' || server.protocol !== '2026-07-28') throw new Error(`mcpServers.${server.name}: not a 2026-07-28 server by URL`);
    return new ModernBackend({ server, settings, clientInfo: EDGE_INFO, logger, credentials: credentialsOf(server, config, logger), ioPerRequest: true });
  });
  const codec = await createWebRequestStateCodec({ keys: deps.stateKeys, ttlSeconds: settings.requestStateTtlSeconds, now: clock.now });
  const remote = createRemoteTaskIds(await createWebCompactJwe(deps.stateKeys));
  const quotas = new InMemoryQuotas();
  const engine = new CallEngine({ instanceId: EDGE_INSTANCE, directory: new InMemoryCallDirectory(), callTimeoutMs: settings.callTimeoutMs, log: logger });
  const registry = new TaskRegistry({ instanceId: EDGE_INSTANCE, clock, quotas, settings: settings.tasks, log: logger });
  const catalog = new Catalog(backends, settings.toolNameSeparator, logger);
  const access = settings.policy && createAccessPolicy(settings.policy);
  const stamp = { serverInfo: EDGE_INFO, cacheTtlMs: settings.cacheTtlMs, cacheScope: settings.cacheScope };
  const events = createEventBus();
  let closed = false;
  const stopping = (): boolean => closed;
  const handle = createDispatch({
    catalog,
    engine,
    quotas,
    codec,
    stamp,
    instructions: settings.instructions,
    stopping,
    clock,
    log: logger,
    access,
    tasks: { registry, policy: { promoteAfterMs: settings.tasks.promoteAfterMs, servers: new Map(), promotes: false }, remote },
    options: roundsOptionsOf(settings),
  });
  const modern = createModernDialect({
    handle,
    stopping,
    listen: {
      catalog,
      events,
      stamp,
      quotas,
      shares: createShares(quotas),
      logger,
      maxPerPrincipal: settings.maxListenPerPrincipal,
      maxTotal: settings.maxListenTotal,
      tasks: registry,
      // Each stream follows the backends' own list changes (nothing is shared between requests here).
      upstream: async (kinds, onChange, signal, follow) => {
        await Promise.all(backends.map((b) => b.followListChanges(kinds, onChange, signal, follow)));
      },
    },
  });
  const ready = readinessOf(backends, () => closed, ['lastError']);
  const app = createApp({
    routes: new Map([[settings.path, modern]]),
    // At the edge the Host is the platform's to route; Origin is still checked (allowedOrigins, localhost).
    policy: originPolicy('0.0.0.0', settings.allowedHosts, settings.allowedOrigins),
    authenticate: createAuthenticator(config.apiKeys, oauthSettingsOf(settings.oauth, config.secrets), logger, undefined, config.delegating),
    resourceMetadata: settings.oauth && { paths: resourceMetadataPaths([settings.path]), document: resourceMetadata(settings.oauth) },
    logger,
    isServing: () => !closed,
    // Each /readyz asks the servers again (no I/O between requests here would see one go away), and
    // without lastError: an error can name the core's internal address, and /readyz may be public here.
    readiness: checkingReach(backends, ready),
    inFlight: new InFlight(settings.maxRequestsInFlightPerPrincipal, settings.maxRequestsInFlightTotal),
  });
  return {
    fetch: async (request) => app.fetch(request),
    async close() {
      if (closed) return;
      closed = true;
      await engine.close();
      await registry.close();
      events.close();
      await Promise.all(backends.map((b) => b.close()));
    },
  };
}

/** The token source of a backend whose entry has `auth` (OAuth client credentials); else undefined. */
function credentialsOf(server: HttpServerConfig, config: GatewayConfig, logger: Logger): BackendCredentials | undefined {
  if (!server.auth) return undefined;
  const { tokenUrl, clientId, clientSecretEnv, scope, resource, timeoutMs } = server.auth;
  return createClientCredentials({
    tokenUrl,
    clientId,
    clientSecret: config.secrets.get(clientSecretEnv) ?? '',
    scope,
    resource: resource ?? server.url,
    timeoutMs,
    backend: server.name,
    logger: logger.child({ backend: server.name }),
    ioPerRequest: true,
  });
}
