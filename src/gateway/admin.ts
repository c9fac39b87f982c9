/**
 * What the operator sees: the gauges' sources (read at each scrape), a sample every few seconds for the
 * admin page's charts, and the admin view (http/admin/admin-view.ts) over the gateway's parts: its
 * backends, the calls parked now, tasks, sessions, the cluster's instances, the sampling breakers, and
 * the actions (cancel a parked call or a task, drain).
 */
import type { RedisCluster } from '../cluster/redis/cluster.js';
import type { BackendPort } from '../core/backend/port.js';
import type { CallEngine } from '../core/calls/call-engine.js';
import { GatewayError } from '../errors.js';
import type { ParkedCall } from '../fronts/mrtr/parking.js';
import type { TaskRegistry } from '../fronts/tasks/registry.js';
import type { AdminSample, AdminSnapshot, AdminView } from '../http/admin/admin-view.js';
import { isErrorOutcome } from '../observe/metric-labels.js';
import type { Metrics, MetricSources } from '../observe/metrics.js';
import type { Clock } from '../util/clock.js';
import type { Lifecycle } from './lifecycle.js';

export interface AdminDeps {
  readonly instanceId: string;
  readonly metrics: Metrics;
  readonly engine: CallEngine;
  readonly backends: readonly BackendPort[];
  readonly parked: () => ParkedCall[];
  readonly registry: TaskRegistry;
  readonly legacySessions: () => number;
  readonly listenStreams: () => number;
  readonly cluster: RedisCluster | undefined;
  readonly life: Lifecycle;
  readonly clock: Clock;
  /** Starts the drain (the entry point's shutdown path, so the process exits when it is done). */
  readonly drain: () => void;
  /** How often a chart sample is taken (default 5 s; 60 are kept). */
  readonly sampleMs?: number | undefined;
}

/** How many chart samples are kept (five minutes at the default interval). */
const SAMPLES = 60;

/** Counts requests and errors as they pass (for the charts), and counts them on to `metrics`. */
export function tallied(metrics: Metrics): Metrics & { readonly totals: { requests: number; errors: number } } {
  const totals = { requests: 0, errors: 0 };
  return {
    ...metrics,
    totals,
    exchange(front, method, outcome, seconds, principal) {
      totals.requests += 1;
      if (isErrorOutcome(outcome)) totals.errors += 1;
      metrics.exchange(front, method, outcome, seconds, principal);
    },
    refused(check, status) {
      totals.requests += 1;
      totals.errors += 1;
      metrics.refused(check, status);
    },
  };
}

/** Registers the gauges' sources with the metrics. */
export function metricSources(deps: AdminDeps): MetricSources {
  const cluster = deps.cluster;
  return {
    parked: () => deps.parked().map((p) => ({ backend: p.backend, ageSeconds: p.ageMs / 1000 })),
    tasks: () => {
      const counts: Record<string, number> = {};
      for (const t of deps.registry.list()) {
        const status = deps.registry.snapshot(t).status;
        counts[status] = (counts[status] ?? 0) + 1;
      }
      return counts;
    },
    legacySessions: deps.legacySessions,
    listenStreams: deps.listenStreams,
    liveCalls: () => deps.engine.live,
    backends: () => deps.backends.map((b) => ({ ...b.health(), pool: b.stats })),
    breakers: () => deps.engine.breakers(),
    ...(cluster ? { cluster: () => clusterReading(cluster) } : {}),
  };
}

async function clusterReading(cluster: RedisCluster): Promise<{ instances: number; redisUp: boolean }> {
  try {
    return { instances: (await cluster.instances.live()).size, redisUp: cluster.available };
  } catch {
    return { instances: 0, redisUp: false };
  }
}

/** The admin view, and a sampler whose timer is stopped by the returned `close`. */
export function createAdminView(deps: AdminDeps, totals: { readonly requests: number; readonly errors: number }): { view: AdminView; close: () => void } {
  const history: AdminSample[] = [];
  let last = { at: deps.clock.now(), requests: totals.requests, errors: totals.errors };
  const sample = (): void => {
    const at = deps.clock.now();
    const secs = Math.max(0.001, (at - last.at) / 1000);
    history.push({
      at,
      requestsPerSecond: (totals.requests - last.requests) / secs,
      errorsPerSecond: (totals.errors - last.errors) / secs,
      parked: deps.parked().length,
    });
    if (history.length > SAMPLES) history.shift();
    last = { at, requests: totals.requests, errors: totals.errors };
  };
  const timer = setInterval(sample, deps.sampleMs ?? 5_000);
  timer.unref();
  const view: AdminView = {
    snapshot: () => snapshotOf(deps, history),
    metrics: () => deps.metrics.scrape(),
    cancelCall(id) {
      const call = deps.parked().find((p) => p.id === id) ? deps.engine.get(id) : undefined;
      if (!call || call.done) return false;
      call.cancel(new GatewayError('cancelled', 'cancelled by an operator'));
      return true;
    },
    cancelTask(id) {
      const task = deps.registry.list().find((t) => t.id === id);
      if (!task) return false;
      deps.registry.cancel(task, 'the task was cancelled by an operator');
      return true;
    },
    drain: () => deps.drain(),
  };
  return { view, close: () => clearInterval(timer) };
}

async function snapshotOf(deps: AdminDeps, history: readonly AdminSample[]): Promise<AdminSnapshot> {
  const now = deps.clock.now();
  return {
    instanceId: deps.instanceId,
    state: deps.life.state,
    at: Date.now(),
    backends: deps.backends.map((b) => {
      const h = b.health();
      return { name: h.name, state: h.state, failures: h.failures, lastError: h.lastError, pool: b.stats };
    }),
    parked: deps.parked(),
    tasks: deps.registry.list().map((t) => ({
      id: t.id,
      principal: t.principal,
      status: deps.registry.snapshot(t).status,
      backend: t.call.backend,
      ageMs: now - t.createdAt,
    })),
    sessions: { legacy: deps.legacySessions(), listen: deps.listenStreams() },
    instances: await instancesOf(deps),
    breakers: deps.engine.breakers(),
    history: [...history],
  };
}

async function instancesOf(deps: AdminDeps): Promise<AdminSnapshot['instances']> {
  if (!deps.cluster) return undefined;
  try {
    const live = await deps.cluster.instances.live();
    return [...live].map(([id, url]) => ({ id, url: url || undefined, self: id === deps.instanceId }));
  } catch {
    return [];
  }
}
