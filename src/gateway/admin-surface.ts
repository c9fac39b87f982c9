/**
 * The admin listener's handler, when `gateway.admin` is configured: the metrics' gauge sources are
 * registered, the chart sampler starts (stopped on close), and the admin routes (http/admin) get the
 * view, the key and a Host/Origin policy of their own host. Serving it on its port is the entry point's.
 */
import type { GatewayConfig } from '../config.js';
import { createAdminApp } from '../http/admin/admin-app.js';
import { originPolicy } from '../http/guards.js';
import type { Logger } from '../log.js';
import type { CloserStack } from '../util/closer-stack.js';
import { createAdminView, metricSources, type AdminDeps } from './admin.js';

export interface AdminSurface {
  /** Where the entry point serves it (`gateway.admin.host`, `.port`). */
  readonly host: string;
  readonly port: number;
  fetch(request: Request): Promise<Response>;
}

export function openAdmin(
  config: GatewayConfig,
  deps: AdminDeps & { readonly totals?: { readonly requests: number; readonly errors: number }; readonly logger: Logger; readonly closers: CloserStack },
): AdminSurface | undefined {
  const settings = config.gateway.admin;
  if (deps.metrics.enabled) deps.metrics.read(metricSources(deps));
  if (!settings) return undefined;
  const totals = deps.totals ?? { requests: 0, errors: 0 };
  const { view, close } = createAdminView({ ...deps, sampleMs: settings.sampleMs }, totals);
  const closed = new AbortController();
  deps.closers.push('admin sampler and live pages', () => {
    close();
    closed.abort();
  });
  const app = createAdminApp({
    view,
    policy: originPolicy(settings.host, settings.allowedHosts, []),
    key: config.adminKey,
    logger: deps.logger,
    refreshMs: settings.refreshMs,
    closed: closed.signal,
  });
  return { host: settings.host, port: settings.port, fetch: async (request) => app.fetch(request) };
}
