/**
 * Composition root: `createGateway(config, deps)` → `{ fetch, close, ready }`.
 * Web-standard: `fetch(Request) → Response`; runtime adapters (src/main.ts on Node) stay outside.
 */
import { ulid } from 'ulid';
import type { GatewayConfig } from './config.js';
import { silentLogger, type Logger } from './log.js';
import { Backend } from './core/backend/backend.js';
import type { CatalogBackend } from './core/backend/catalog-backend.js';
import { ModernBackend } from './core/backend/modern-backend.js';
import { Catalog } from './core/catalog.js';
import { CallService } from './core/calls/call-service.js';
import { InMemoryParkedCallStore, type ParkedCallStore } from './core/calls/parked-call-store.js';
import { createRequestStateCodec, type StateKey } from './protocol/request-state.js';
import { createFront } from './protocol/rev-2026-07-28/front.js';
import { createListen } from './protocol/rev-2026-07-28/listen.js';
import { createEventBus } from './core/events.js';
import { createApp } from './http/app.js';
import { createAuthenticator, originPolicy } from './http/guards.js';
import { VERSION } from './version.js';

export interface GatewayDeps {
  /** requestState keys: the first seals, all open. */
  readonly stateKeys: readonly StateKey[];
  readonly logger?: Logger;
  /** Identifies this instance inside requestState (default: a fresh ULID). */
  readonly instanceId?: string;
  /** Where parked calls wait (default: in memory, bounded by the config). */
  readonly store?: ParkedCallStore;
}

export interface Gateway {
  /** Serves one HTTP request. */
  fetch(request: Request): Promise<Response>;
  /** Resolves when every backend has made its first connection attempt. */
  readonly ready: Promise<void>;
  readonly backends: readonly CatalogBackend[];
  readonly store: ParkedCallStore;
  readonly instanceId: string;
  /** Cancels parked calls, closes backend sessions; idempotent. */
  close(): Promise<void>;
}

export const SERVER_INFO = { name: 'mcp-mrtr-gateway', version: VERSION } as const;

export async function createGateway(config: GatewayConfig, deps: GatewayDeps): Promise<Gateway> {
  const logger = deps.logger ?? silentLogger;
  const settings = config.gateway;
  const instanceId = deps.instanceId ?? ulid();
  const codec = await createRequestStateCodec({ keys: deps.stateKeys, ttlSeconds: settings.requestStateTtlSeconds });
  const store = deps.store ?? new InMemoryParkedCallStore({ maxPerPrincipal: settings.maxParkedPerPrincipal, maxTotal: settings.maxParkedTotal });
  const events = createEventBus();
  const backends: CatalogBackend[] = config.servers.map((server) =>
    server.kind === 'http' && server.protocol === '2026-07-28'
      ? new ModernBackend({ server, settings, clientInfo: SERVER_INFO, logger })
      : new Backend({ server, settings, clientInfo: SERVER_INFO, logger, onListChanged: (kind) => events.emitListChanged(kind, server.name) }),
  );
  const catalog = new Catalog(backends, settings.toolNameSeparator, logger);
  const calls = new CallService({
    store,
    coalesceMs: settings.coalesceMs,
    callTimeoutMs: settings.callTimeoutMs,
    parkTtlMs: settings.requestStateTtlSeconds * 1000,
  });
  const stamp = { serverInfo: SERVER_INFO, cacheTtlMs: settings.cacheTtlMs, cacheScope: settings.cacheScope };
  const front = createFront({
    catalog,
    calls,
    store,
    codec,
    instanceId,
    stamp,
    instructions: settings.instructions,
    logger,
    callTimeoutMs: settings.callTimeoutMs,
  });
  let serving = true;
  const app = createApp({
    path: settings.path,
    front,
    listen: createListen({ catalog, events, stamp }),
    policy: originPolicy(settings.host, settings.allowedHosts, settings.allowedOrigins),
    authenticate: await createAuthenticator(config.apiKeys),
    logger,
    isServing: () => serving,
  });
  const ready = Promise.all(backends.map((b) => b.start())).then(() => undefined);
  let closing: Promise<void> | undefined;

  return {
    fetch: async (request) => app.fetch(request),
    ready,
    backends,
    store,
    instanceId,
    close() {
      closing ??= (async () => {
        serving = false;
        events.close();
        store.close();
        await Promise.all(backends.map((b) => b.close()));
      })();
      return closing;
    },
  };
}
