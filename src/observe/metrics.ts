/**
 * The gateway's metrics (Prometheus text format, prom-client): what happened (counters and latency
 * histograms, counted where it happens) and what is (gauges and the parked-call age histogram, read
 * from their sources at each scrape). One registry per gateway, so several gateways in one process
 * (tests, the cluster bench) never mix their figures.
 *
 * Labels are bounded sets only: fronts, methods from the MCP method list (`other` for the rest),
 * outcomes from the gateway's own result types and error reasons, backend names from the config. No
 * principal, call, task or session id is ever a label value.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { REQUEST_STATE_REFUSALS } from '../errors.js';

/** One labelled reading of a gauge. */
export interface Reading {
  readonly labels?: Record<string, string>;
  readonly value: number;
}

/** Where the gauges read what is, at each scrape (a source that throws leaves its gauge empty). */
export interface MetricSources {
  /** Calls parked for a retry: their backend and age in seconds. */
  parked?(): readonly { readonly backend: string; readonly ageSeconds: number }[];
  /** Tasks this instance holds, by status. */
  tasks?(): Readonly<Record<string, number>>;
  /** Open legacy client sessions (streamable HTTP and 2024 HTTP+SSE). */
  legacySessions?(): number;
  /** Open `subscriptions/listen` streams. */
  listenStreams?(): number;
  /** Calls not yet ended. */
  liveCalls?(): number;
  /** Each backend's connection state and its session pool. */
  backends?(): readonly BackendReading[];
  /** Sampling circuit breakers by state. */
  breakers?(): Readonly<Record<string, number>>;
  /** Cluster: instances whose heartbeat stands, and whether Redis answers (undefined: no cluster). */
  cluster?(): Promise<{ readonly instances: number; readonly redisUp: boolean } | undefined>;
}

export interface BackendReading {
  readonly name: string;
  readonly state: 'up' | 'connecting' | 'down';
  readonly failures: number;
  readonly pool?: { readonly sessions: number; readonly busy: number; readonly waiting: number; readonly connecting: number } | undefined;
}

/** What the gateway's parts count. Every method is cheap and never throws. */
export interface Metrics {
  /** False for `noMetrics`: callers may skip work that only feeds metrics. */
  readonly enabled: boolean;
  /** One JSON-RPC exchange a front served for `principal` ended: its outcome (metric-labels.ts) and duration. */
  exchange(front: string, method: string, outcome: string, seconds: number, principal: string): void;
  /** A client answered a round: the time between the round's `input_required` and its retry. */
  thinkTime(seconds: number): void;
  /** A call a front followed ended after `rounds` input rounds. */
  callEnded(rounds: number): void;
  /** A request was refused before it became an exchange: at which check (gate, content, body, rate_limit, envelope), with which HTTP status. */
  refused(check: string, status: number): void;
  /** The Node server closed a client connection itself: over `maxConnections` as it came, or past `sendTimeoutMs` unread. */
  connectionClosed(reason: 'max_connections' | 'send_timeout'): void;
  /** A request was forwarded to the instance that holds its call or session, or arrived so. */
  forward(direction: 'sent' | 'received', outcome: string): void;
  /** A backend's main connection came up or was lost. */
  backendConnection(backend: string, change: string): void;
  /** A request waited for a free backend session this long. */
  poolWait(backend: string, seconds: number): void;
  /** A call that waited for its client gave its backend session up to a call that waited for one (`reclaimParkedAfterMs`). */
  reclaimed(backend: string): void;
  /** A Redis command (the cluster's shared state) took this long: `ok`, `error` (Redis refused it) or `unavailable`. */
  redisCommand(seconds: number, outcome: string): void;
  /** Registers what the gauges read at each scrape (once per gateway). */
  read(sources: MetricSources): void;
  /** The exposition: the text and its content type. */
  scrape(): Promise<{ readonly contentType: string; readonly text: string }>;
}

/** Metrics off: nothing is counted and the scrape is empty. */
export const noMetrics: Metrics = {
  enabled: false,
  exchange() {},
  thinkTime() {},
  callEnded() {},
  refused() {},
  connectionClosed() {},
  forward() {},
  backendConnection() {},
  poolWait() {},
  reclaimed() {},
  redisCommand() {},
  read() {},
  scrape: () => Promise.resolve({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '' }),
};

const PREFIX = 'mcp_gateway_';
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const THINK_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
const ROUND_BUCKETS = [0, 1, 2, 3, 5, 8, 13, 21];

/** Counting metrics; with `processMetrics`, Node's process metrics (`process_*`, `nodejs_*`) as prom-client collects them. */
export function createMetrics(
  opts: {
    readonly processMetrics?: boolean;
    readonly principals?: readonly string[];
    /**
     * The configured backends: a counter's `backend` label is one of them, or `added` for a server a
     * client added at run time (add_server: its name is the client's, and would be a series forever);
     * the parked-call gauge reads 0 for each of them rather than nothing.
     */
    readonly backends?: readonly string[];
  } = {},
): Metrics {
  const registry = new Registry();
  const registers = [registry];
  // Process metrics start observers that live as long as the process: the entry point's choice, once.
  if (opts.processMetrics === true) collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: `${PREFIX}requests_total`,
    help: 'JSON-RPC requests served, by front, method and outcome (a result type, or the error reason)',
    labelNames: ['front', 'method', 'outcome'],
    registers,
  });
  const duration = new Histogram({
    name: `${PREFIX}request_duration_seconds`,
    help: 'Time from a request to its answer (one round of an MRTR call), by front and method',
    labelNames: ['front', 'method'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const stateFailures = new Counter({
    name: `${PREFIX}request_state_failures_total`,
    help: 'Retries refused for their requestState, by reason (malformed, invalid, expired, principal, request, gone, stale, instance)',
    labelNames: ['reason'],
    registers,
  });
  // Each reason reads 0 from the start: a rate or an alert over it needs the series before the first refusal.
  for (const reason of REQUEST_STATE_REFUSALS) stateFailures.inc({ reason }, 0);
  const think = new Histogram({
    name: `${PREFIX}client_think_seconds`,
    help: "Time between a round's input_required answer and the retry that answers it",
    buckets: THINK_BUCKETS,
    registers,
  });
  const rounds = new Histogram({
    name: `${PREFIX}call_input_rounds`,
    help: 'Input rounds (input_required answers) per ended call',
    buckets: ROUND_BUCKETS,
    registers,
  });
  const refusals = new Counter({
    name: `${PREFIX}refused_requests_total`,
    help: 'Requests refused before they became an exchange, by check (gate: Host, Origin, authentication; content; body; rate_limit; envelope) and HTTP status',
    labelNames: ['check', 'status'],
    registers,
  });
  const closedConnections = new Counter({
    name: `${PREFIX}connections_closed_total`,
    help: 'Client connections the Node server closed itself, by reason (max_connections: one more than gateway.maxConnections, closed as it came; send_timeout: it took nothing of what was sent to it for gateway.sendTimeoutMs)',
    labelNames: ['reason'],
    registers,
  });
  const forwards = new Counter({
    name: `${PREFIX}forwards_total`,
    help: 'Requests forwarded between cluster instances: sent by this one or received from another, by outcome',
    labelNames: ['direction', 'outcome'],
    registers,
  });
  const configured = opts.backends && new Set(opts.backends);
  const backendLabel = (name: string): string => (!configured || configured.has(name) ? name : 'added');
  const backends = backendCounters(registers, backendLabel);
  const redis = new Histogram({
    name: `${PREFIX}redis_command_seconds`,
    help: 'Redis commands of the cluster state, by outcome (ok, error, unavailable)',
    labelNames: ['outcome'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2],
    registers,
  });
  let gauges: { refresh(): Promise<void> } | undefined;
  const listed = new Set(opts.principals ?? []);
  const byPrincipal =
    listed.size > 0
      ? new Counter({
          name: `${PREFIX}principal_requests_total`,
          help: 'Requests by principal (the ones the operator listed in gateway.admin.principals; every other is "other") and outcome',
          labelNames: ['principal', 'outcome'],
          registers,
        })
      : undefined;
  return {
    enabled: true,
    exchange(front, method, outcome, seconds, principal) {
      requests.inc({ front, method, outcome });
      byPrincipal?.inc({ principal: listed.has(principal) ? principal : 'other', outcome });
      duration.observe({ front, method }, seconds);
      if (outcome.startsWith('request_state_')) stateFailures.inc({ reason: outcome.slice('request_state_'.length) });
    },
    thinkTime: (seconds) => think.observe(seconds),
    callEnded: (n) => rounds.observe(n),
    refused: (check, status) => refusals.inc({ check, status: String(status) }),
    connectionClosed: (reason) => closedConnections.inc({ reason }),
    forward: (direction, outcome) => forwards.inc({ direction, outcome }),
    ...backends,
    redisCommand: (seconds, outcome) => redis.observe({ outcome }, seconds),
    read(sources) {
      gauges = registerGauges(registers, sources, opts.backends ?? []);
    },
    async scrape() {
      await gauges?.refresh();
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}

/** The backends' counters, each by backend (as `label` names it). */
function backendCounters(registers: Registry[], label: (name: string) => string): Pick<Metrics, 'backendConnection' | 'poolWait' | 'reclaimed'> {
  const connections = new Counter({
    name: `${PREFIX}backend_connection_changes_total`,
    help: "Backends' main connections made (connected) and lost (lost)",
    labelNames: ['backend', 'change'],
    registers,
  });
  const poolWaits = new Histogram({
    name: `${PREFIX}backend_pool_wait_seconds`,
    help: 'Time a call waited for a free backend session',
    labelNames: ['backend'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const reclaims = new Counter({
    name: `${PREFIX}backend_sessions_reclaimed_total`,
    help: "Calls cancelled after waiting reclaimParkedAfterMs for their client's answer, so that a call waiting for a backend session got theirs",
    labelNames: ['backend'],
    registers,
  });
  return {
    backendConnection: (backend, change) => connections.inc({ backend: label(backend), change }),
    poolWait: (backend, seconds) => poolWaits.observe({ backend: label(backend) }, seconds),
    reclaimed: (backend) => reclaims.inc({ backend: label(backend) }),
  };
}

/** What the sources said at one scrape: each read once, undefined when it could not be read. */
interface Now {
  readonly parked?: readonly { readonly backend: string; readonly ageSeconds: number }[] | undefined;
  readonly tasks?: Readonly<Record<string, number>> | undefined;
  readonly legacySessions?: number | undefined;
  readonly listenStreams?: number | undefined;
  readonly liveCalls?: number | undefined;
  readonly backends?: readonly BackendReading[] | undefined;
  readonly breakers?: Readonly<Record<string, number>> | undefined;
  readonly cluster?: { readonly instances: number; readonly redisUp: boolean } | undefined;
}

/** `read()`, or undefined when it throws: a source that cannot be read leaves its gauges empty, never fails the scrape. */
async function safely<T>(read: (() => T | Promise<T>) | undefined): Promise<T | undefined> {
  try {
    return await read?.();
  } catch {
    return undefined;
  }
}

/** Reads every source once (several gauges share one reading: one Redis lookup, one walk of the parked calls). */
async function readNow(s: MetricSources): Promise<Now> {
  const [parked, tasks, legacySessions, listenStreams, liveCalls, backends, breakers, cluster] = await Promise.all([
    safely(s.parked),
    safely(s.tasks),
    safely(s.legacySessions),
    safely(s.listenStreams),
    safely(s.liveCalls),
    safely(s.backends),
    safely(s.breakers),
    safely(s.cluster),
  ]);
  return { parked, tasks, legacySessions, listenStreams, liveCalls, backends, breakers, cluster };
}

/** Every task status, at 0: the gauge reads 0 rather than nothing. */
const NO_TASKS: Readonly<Record<string, number>> = { working: 0, input_required: 0, completed: 0, failed: 0, cancelled: 0 };

const one = (value: number | undefined): Reading[] => (value === undefined ? [] : [{ value }]);
const byLabel = (label: string, counts: Readonly<Record<string, number>> | undefined): Reading[] =>
  Object.entries(counts ?? {}).map(([k, value]) => ({ labels: { [label]: k }, value }));

/**
 * The gauges and the parked-call age histogram, over `sources`: `refresh()` reads them all before a
 * scrape, and each collector writes its part of that reading.
 */
function registerGauges(registers: Registry[], sources: MetricSources, configured: readonly string[]): { refresh(): Promise<void> } {
  let now: Now = {};
  const gauge = (name: string, help: string, labelNames: string[], readings: (n: Now) => readonly Reading[]): void => {
    new Gauge({
      name: `${PREFIX}${name}`,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const r of readings(now)) this.set(r.labels ?? {}, r.value);
      },
    });
  };
  gauge('parked_calls', 'Calls parked for the retry of their round, by backend', ['backend'], (n) => {
    if (n.parked === undefined) return []; // unreadable: empty, not 0
    const counts: Record<string, number> = {};
    for (const name of configured) counts[name] = 0;
    for (const p of n.parked) counts[p.backend] = (counts[p.backend] ?? 0) + 1;
    return byLabel('backend', counts);
  });
  new Histogram({
    name: `${PREFIX}parked_call_age_seconds`,
    help: 'Ages of the calls parked now (read at each scrape)',
    buckets: THINK_BUCKETS,
    registers,
    collect() {
      this.reset();
      for (const p of now.parked ?? []) this.observe(p.ageSeconds);
    },
  });
  gauge('tasks', 'Tasks this instance holds, by status', ['status'], (n) => (n.tasks === undefined ? [] : byLabel('status', { ...NO_TASKS, ...n.tasks })));
  gauge('legacy_sessions', 'Open legacy client sessions (2025-11-25 streamable HTTP, 2024-11-05 HTTP+SSE)', [], (n) => one(n.legacySessions));
  gauge('listen_streams', 'Open subscriptions/listen streams', [], (n) => one(n.listenStreams));
  gauge('live_calls', 'Backend calls not yet ended', [], (n) => one(n.liveCalls));
  gauge('backend_up', "1 while a backend's main connection is up", ['backend'], (n) =>
    (n.backends ?? []).map((b) => ({ labels: { backend: b.name }, value: b.state === 'up' ? 1 : 0 })),
  );
  gauge('backend_failures', 'Failed connection attempts since the last success', ['backend'], (n) =>
    (n.backends ?? []).map((b) => ({ labels: { backend: b.name }, value: b.failures })),
  );
  gauge('backend_sessions', 'Backend sessions by state: busy, idle, queued (calls waiting for one), connecting', ['backend', 'state'], (n) =>
    (n.backends ?? []).flatMap((b) => {
      const p = b.pool;
      if (!p) return [];
      const counts = { busy: p.busy, idle: Math.max(0, p.sessions - p.busy), queued: p.waiting, connecting: p.connecting };
      return Object.entries(counts).map(([state, value]) => ({ labels: { backend: b.name, state }, value }));
    }),
  );
  gauge('sampling_breakers', 'Sampling circuit breakers by state', ['state'], (n) => byLabel('state', n.breakers));
  if (sources.cluster) {
    gauge('cluster_instances', 'Cluster instances whose heartbeat stands', [], (n) => one(n.cluster?.instances));
    gauge('redis_up', '1 while Redis (the cluster state) answers', [], (n) => (n.cluster ? [{ value: n.cluster.redisUp ? 1 : 0 }] : []));
  }
  return {
    async refresh() {
      now = await readNow(sources);
    },
  };
}
