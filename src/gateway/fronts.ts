/**
 * The fronts over the one call engine: the dispatch of 2026-07-28 requests (MRTR rounds, lists, tasks),
 * the 2026-07-28 dialect on the endpoint (with `subscriptions/listen`), the draft tasks dialect beside
 * it, and the legacy client sessions (streamable HTTP and HTTP+SSE) with their resource subscriptions.
 */
import type { GatewayConfig } from '../config.js';
import type { Quotas } from '../cluster/quotas.js';
import type { Shares } from '../cluster/shares.js';
import type { BackendPort } from '../core/backend/port.js';
import type { Catalog } from '../core/catalog.js';
import type { CallEngine } from '../core/calls/call-engine.js';
import type { EventBus } from '../core/events.js';
import type { Caller, Dialect, RequestContext, SessionRoute, SseRoute } from '../fronts/dialect.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import { ResourceSubscriptions } from '../fronts/legacy/resource-subscriptions.js';
import { createLegacySessions } from '../fronts/legacy/session-front.js';
import type { ChargeRequests } from '../fronts/legacy/message-limit.js';
import { gatewayCapabilities } from '../fronts/mrtr/server-capabilities.js';
import { createModernDialect } from '../fronts/mrtr/dialect.js';
import { createDispatch } from '../fronts/mrtr/dispatch.js';
import { roundsOptionsOf } from '../fronts/mrtr/rounds.js';
import type { Scopes } from '../fronts/proxy/scopes.js';
import { createDraftDialect } from '../fronts/tasks/draft-dialect.js';
import type { RemoteTaskIds } from '../fronts/tasks/remote.js';
import type { Logger } from '../log.js';
import type { ParkedCall } from '../fronts/mrtr/parking.js';
import type { Metrics } from '../observe/metrics.js';
import type { AccessPolicy } from '../core/access-policy.js';
import { countingOthers, metered, spanned } from './metered.js';
import type { RequestStateCodec } from '../protocol/request-state.js';
import type { Clock } from '../util/clock.js';
import type { CloserStack } from '../util/closer-stack.js';
import { createQuietGap } from './quiet-gap.js';
import type { Lifecycle } from './lifecycle.js';
import { SERVER_INFO } from './server-info.js';
import type { GatewayTasks } from './tasks.js';

export interface FrontsDeps {
  readonly config: GatewayConfig;
  readonly catalog: Catalog;
  readonly backends: readonly BackendPort[];
  readonly engine: CallEngine;
  readonly events: EventBus;
  readonly quotas: Quotas;
  readonly shares: Shares;
  readonly codec: RequestStateCodec;
  readonly remote: RemoteTaskIds;
  readonly tasks: GatewayTasks;
  readonly scopes: Scopes | undefined;
  readonly life: Lifecycle;
  readonly clock: Clock;
  readonly instanceId: string;
  readonly logger: Logger;
  readonly closers: CloserStack;
  readonly metrics: Metrics;
  /** Who may use what (`gateway.policy`); none: everyone everything. */
  readonly access?: AccessPolicy | undefined;
  /** Rate limits: charges a 2024-11-05 HTTP+SSE session's requests (set when requests are limited). */
  readonly chargeRequests?: ChargeRequests | undefined;
}

export interface Fronts {
  readonly modern: Dialect;
  /** Session core (`gateway.core`): each backend alone, unprefixed, by its name (served at `<path>/<name>`; the proxy tools as `proxy`). */
  readonly alone: ReadonlyMap<string, Dialect>;
  readonly draft: Dialect;
  readonly legacy: SessionRoute & SseRoute & { readonly inFlight: number; readonly size: number };
  /** The calls parked now (every front's rounds share one parking). */
  readonly parked: () => ParkedCall[];
}

/** Whether a caller may read (so subscribe to) a resource: the policy on its backend, URI and template. */
function mayReadOf(catalog: Catalog, access: AccessPolicy | undefined): ((caller: Caller, uri: string) => Promise<boolean>) | undefined {
  if (!access) return undefined;
  return async (caller, uri) => {
    const route = await catalog.resolveResource(uri);
    return route === undefined || access.for(caller).allowsResource(route.backend.name, uri, route.template);
  };
}

/** A legacy client request served as `work` serves it (its rounds inside), for metered() and spanned() to wrap. */
const observed = (_req: FrontRequest, _ctx: RequestContext, work: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> => work();

export function createFronts(deps: FrontsDeps): Fronts {
  const { config, catalog, backends, engine, events, quotas, shares, codec, clock, instanceId, logger } = deps;
  const settings = config.gateway;
  const stamp = { serverInfo: SERVER_INFO, cacheTtlMs: settings.cacheTtlMs, cacheScope: settings.cacheScope };
  // The quiet gap for backends whose activity cannot be seen, stretched by the measured load for operations that ask together.
  const quietGap = createQuietGap(settings.coalesceQuietMs, settings.coalesceMs);
  deps.closers.push('round quiet gap', () => quietGap.close());
  /** The dispatch and 2026-07-28 dialect over `over` (the whole catalog, or one backend's alone). */
  const modernOver = (over: Catalog, only?: ReadonlySet<string>): { handle: ReturnType<typeof createDispatch>; dialect: Dialect } => {
    const handle = createDispatch({
      catalog: over,
      engine,
      quotas,
      codec,
      stamp,
      instructions: settings.instructions,
      stopping: deps.life.stopping,
      clock,
      log: logger,
      metrics: deps.metrics,
      access: deps.access,
      tasks: { registry: deps.tasks.registry, policy: deps.tasks.policy, remote: deps.remote, elsewhere: deps.tasks.elsewhere?.gone },
      options: roundsOptionsOf(settings, quietGap.ms),
    });
    const dialect = createModernDialect({
      handle,
      stopping: deps.life.stopping,
      listen: {
        catalog: over,
        events,
        stamp,
        quotas,
        shares,
        logger,
        maxPerPrincipal: settings.maxListenPerPrincipal,
        maxTotal: settings.maxListenTotal,
        tasks: deps.tasks.registry,
        elsewhere: deps.tasks.elsewhere,
        backends: only,
      },
    });
    return { handle, dialect };
  };
  const { handle, dialect: modern } = modernOver(catalog);
  const alone = new Map<string, Dialect>();
  // The gateway's own proxy tools (the one unprefixed backend) are served alone as `proxy`.
  if (settings.core) for (const b of catalog.backends) alone.set(b.unprefixed ? 'proxy' : b.name, modernOver(catalog.alone(b), new Set([b.name])).dialect);
  const draft = createDraftDialect({ handle, registry: deps.tasks.registry, stamp });
  const subscriptions = new ResourceSubscriptions({
    resolve: async (uri) => (await catalog.resolveResource(uri))?.backend,
    events,
    timeoutMs: 30_000,
  });
  deps.closers.push('resource subscriptions', () => subscriptions.close());
  const legacy = createLegacySessions({
    handle,
    stopping: deps.life.stopping,
    observe: metered('legacy', spanned('legacy', observed), deps.metrics),
    countOthers: countingOthers('legacy', deps.metrics),
    mayRead: mayReadOf(catalog, deps.access),
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
    jsonAnswerMs: settings.legacyJsonAnswerMs,
    maxSessions: settings.maxLegacySessions,
    maxSessionsPerPrincipal: settings.maxLegacySessionsPerPrincipal,
    scopes: deps.scopes,
    inputTimeoutMs: settings.requestStateTtlSeconds * 1000,
    chargeRequests: deps.chargeRequests,
  });
  deps.closers.push('legacy sessions', () => legacy.close());
  return { modern, alone, draft, legacy, parked: handle.parked };
}
