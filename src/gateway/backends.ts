/**
 * One backend port per configured (or added) server: a 2026-07-28 server by URL is a `ModernBackend`,
 * every other a `LegacyBackend` with its fair share of sessions per principal. The factory also knows
 * which backends are the same server for every instance of a cluster (reached by URL) and which are
 * each instance's own (a process over stdio), for the cluster's event bus. An HTTP server with `auth`
 * gets its own OAuth client-credentials token source (auth/client-credentials.ts), which core/backend
 * sees only as `BackendCredentials`.
 */
import { availableParallelism } from 'node:os';
import { createClientCredentials } from '../auth/client-credentials.js';
import type { GatewayConfig, ServerConfig } from '../config.js';
import type { BackendCredentials } from '../core/backend/backend-credentials.js';
import { LegacyBackend } from '../core/backend/legacy-backend.js';
import { ModernBackend } from '../core/backend/modern-backend.js';
import type { BackendPort } from '../core/backend/port.js';
import type { EventBus } from '../core/events.js';
import type { Logger } from '../log.js';
import { noMetrics, type Metrics } from '../observe/metrics.js';
import { SERVER_INFO } from './server-info.js';

export interface BackendFactory {
  /** The port of `server`, announcing its list changes, resource updates and connection changes on `events`. */
  make(server: ServerConfig, events: EventBus): BackendPort;
  /** True when the backend is reached by URL: every instance of a cluster talks to the same server. */
  sameOnEveryInstance(backend: string): boolean;
}

export function createBackendFactory(config: GatewayConfig, logger: Logger, metrics: Metrics = noMetrics): BackendFactory {
  const byUrl = new Set<string>();
  return {
    sameOnEveryInstance: (backend) => byUrl.has(backend),
    make(server, events) {
      if (server.kind === 'http') byUrl.add(server.name);
      else byUrl.delete(server.name);
      return createBackend(server, config, events, logger, metrics);
    },
  };
}

function createBackend(server: ServerConfig, config: GatewayConfig, events: EventBus, logger: Logger, metrics: Metrics): BackendPort {
  const common = { settings: config.gateway, clientInfo: SERVER_INFO, logger, credentials: credentialsOf(server, config, logger) };
  if (server.kind === 'http' && server.protocol === '2026-07-28') return new ModernBackend({ server, ...common });
  const maxSessions = server.maxSessions ?? config.gateway.maxSessionsPerBackend;
  // Fair share: with several principals, none may hold more than half of a backend's sessions.
  const principals = new Set(config.apiKeys.values()).size;
  const share = config.gateway.maxSessionsPerPrincipal ?? (principals > 1 ? Math.max(1, Math.ceil(maxSessions / 2)) : undefined);
  return new LegacyBackend({
    server,
    ...common,
    maxSessionsPerPrincipal: share,
    // A start is mostly CPU (a server loading its code): about one per core at a time.
    maxSessionStarts: config.gateway.maxSessionStarts ?? Math.max(2, availableParallelism()),
    onListChanged: (kind) => events.emitListChanged(kind, server.name),
    onResourceUpdated: (uri) => events.emitResourceUpdated(uri, server.name),
    onConnection: (change) => events.emitConnection(change, server.name),
    ...(metrics.enabled ? { onPoolWait: (seconds: number) => metrics.poolWait(server.name, seconds), onReclaim: () => metrics.reclaimed(server.name) } : {}),
  });
}

/** The token source of an HTTP server whose entry has `auth` (its secret resolved by parseConfig); else undefined. */
function credentialsOf(server: ServerConfig, config: GatewayConfig, logger: Logger): BackendCredentials | undefined {
  if (server.kind !== 'http' || !server.auth) return undefined;
  const { tokenUrl, clientId, clientSecretEnv, scope, resource, timeoutMs } = server.auth;
  const clientSecret = config.secrets.get(clientSecretEnv);
  if (clientSecret === undefined) throw new Error(`mcpServers.${server.name}.auth: no client secret in ${clientSecretEnv}`);
  return createClientCredentials({
    tokenUrl,
    clientId,
    clientSecret,
    scope,
    resource: resource ?? server.url,
    timeoutMs,
    backend: server.name,
    logger: logger.child({ backend: server.name }),
  });
}
