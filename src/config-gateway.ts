/**
 * The schema of the `gateway` section: where the gateway listens, who may call it (API keys, OAuth,
 * policy, rate limits), how calls are held and bounded, the proxy tools, tasks, the cluster and the
 * admin listener. config.ts reads the file with it.
 */
import * as z from 'zod/v4';
import { nonEmpty } from './config-servers.js';

/** The header a delegating front names its caller in (URI-encoded). */
export const PRINCIPAL_HEADER = 'mcp-gateway-principal';

const apiKey = z
  .strictObject({
    principal: nonEmpty,
    key: z.string().min(16).optional(),
    keyEnv: nonEmpty.optional(),
    /**
     * The key of a front that names its own callers (an edge handler with `forwardPrincipal`): a request
     * with `Mcp-Gateway-Principal: <name>` runs as `<principal>/<name>`; without it, as `<principal>`.
     * That header with any other key (or none) is refused 403.
     */
    delegates: z.boolean().default(false),
  })
  .refine((k) => (k.key === undefined) !== (k.keyEnv === undefined), {
    message: 'give exactly one of "key" or "keyEnv"',
  });

/**
 * The gateway's own proxy tools (seeds 000/001: `execute_tool`, `await_activity`, ...), for clients with
 * nothing but tool calling. Off unless enabled; `add_server` is off unless an allow-list is given.
 */
/** Glob patterns over servers and item names (core/access-policy.ts). */
const itemPatterns = z.strictObject({
  servers: z.array(nonEmpty).optional(),
  tools: z.array(nonEmpty).optional(),
  prompts: z.array(nonEmpty).optional(),
  resources: z.array(nonEmpty).optional(),
});
const policyRule = z.strictObject({
  principals: z.array(nonEmpty).optional(),
  groups: z.array(nonEmpty).optional(),
  scopes: z.array(nonEmpty).optional(),
  allow: itemPatterns.optional(),
  deny: itemPatterns.optional(),
});

const proxyTools = z.strictObject({
  enabled: z.boolean().default(false),
  /** "beside": listed with the backends' own tools; "alone": the only tools listed (backends are reached through them). */
  mode: z.enum(['beside', 'alone']).default('beside'),
  /** `execute_tool` past this (or its `timeout_ms`) becomes a task. */
  executeTimeoutMs: z.int().min(1).max(3_600_000).default(120_000),
  /** `await_activity`'s default wait, and the longest it may be asked for. */
  awaitTimeoutMs: z.int().min(1).max(600_000).default(30_000),
  maxAwaitTimeoutMs: z.int().min(1).max(3_600_000).default(300_000),
  /** `await_activity` calls waiting at once, per principal and in total (each holds a client connection). */
  maxAwaitPerPrincipal: z.int().min(1).default(16),
  maxAwaitTotal: z.int().min(1).default(256),
  /**
   * Backend log lines of a scope's calls at or above this level are also `notification` events (every
   * line is kept for `get_logs`). A request that carries its own `logLevel` (2026-07-28 `_meta`, or a
   * legacy session's `logging/setLevel`) sets the level for the work it starts instead.
   */
  logEventLevel: z.enum(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']).default('warning'),
  /** Per scope: events kept, log lines kept, notifications kept. */
  maxEvents: z.int().min(1).max(100_000).default(1_000),
  maxLogs: z.int().min(1).max(100_000).default(1_000),
  maxNotifications: z.int().min(1).max(100_000).default(500),
  /** A scope (principal or workspace) with nothing running is forgotten after this long unused. */
  scopeIdleMs: z
    .int()
    .min(1_000)
    .default(30 * 60_000),
  /** Workspaces a principal may open. */
  maxWorkspacesPerPrincipal: z.int().min(1).max(1_000).default(16),
  /**
   * `add_server`: the servers a client may add. A URL must match one of `urls` (`*` matches any run of
   * characters inside one part of the URL, never across `/`, `@`, `?` or `#`, e.g.
   * "http://127.0.0.1:*" + "/mcp"; URLs with credentials are refused); a command line (the command and
   * its arguments, space-separated) must be one of `commands` exactly. At most `maxAdded` at once.
   * Empty lists (default): `add_server` is refused.
   */
  addServer: z
    .strictObject({ urls: z.array(nonEmpty).default([]), commands: z.array(nonEmpty).default([]), maxAdded: z.int().min(1).max(256).default(16) })
    .default({ urls: [], commands: [], maxAdded: 16 }),
});

// --- rate limits (issue 29) ---
/** Tokens per minute of a bucket: fractions allowed (0.5 = one every two minutes). */
const perMinute = z.number().positive().max(1_000_000);
/** How many a bucket saves up (the most that can be spent at once); default: one minute's worth (at least 1). */
const burst = z.int().min(1).max(1_000_000).optional();
const callBucket = z.strictObject({ callsPerMinute: perMinute, burst });

/**
 * Rate limits per principal (off unless given; each limit off unless set). `requestsPerMinute`/`burst`:
 * a token bucket of JSON-RPC requests (every front; MRTR retries carrying `requestState` are not
 * charged). `perServer` (every backend) and `servers.<name>` (one backend, instead of `perServer`): a
 * bucket of tools/call, prompts/get and resources/read per principal × server. `maxConcurrentCalls`:
 * backend calls in flight at once per principal. Cluster-wide with `gateway.cluster` (Redis).
 */
const rateLimits = z
  .strictObject({
    requestsPerMinute: perMinute.optional(),
    burst,
    perServer: callBucket.optional(),
    servers: z.record(nonEmpty, callBucket).default({}),
    maxConcurrentCalls: z.int().min(1).max(100_000).optional(),
  })
  .refine((r) => r.burst === undefined || r.requestsPerMinute !== undefined, { message: 'burst needs requestsPerMinute', path: ['burst'] });
// --- end rate limits ---

export const gatewaySection = z.strictObject({
  host: nonEmpty.default('127.0.0.1'),
  port: z.int().min(0).max(65535).default(8787),
  path: z
    .string()
    .regex(/^\/[A-Za-z0-9/_-]*$/)
    .default('/mcp'),
  /** Extra hostnames accepted in Host/Origin besides localhost when bound to loopback. */
  allowedHosts: z.array(nonEmpty).default([]),
  allowedOrigins: z.array(nonEmpty).default([]),
  requestStateTtlSeconds: z.int().min(1).max(86_400).default(600),
  maxParkedPerPrincipal: z.int().min(1).default(64),
  maxParkedTotal: z.int().min(1).default(1024),
  /**
   * The longest an input round waits for more backend requests after the first (an upper bound, never
   * a fixed wait): reached only while the backend is still at work (or, for a backend whose activity
   * cannot be seen, while requests keep coming within the quiet gap). 100 ms: on a loaded machine a
   * backend preempted between two requests it makes together may resume tens of ms later.
   */
  coalesceMs: z.int().min(0).max(5_000).default(100),
  /**
   * An input round goes out once the backend is quiet and one more event-loop turn has read what was
   * already waiting on its pipe or socket. A stdio backend (Linux) is quiet when its process sleeps
   * in every thread with no message half-read (core/backend/process-activity.ts): no time gap, at any
   * load. For a backend whose activity cannot be seen (HTTP; stdio without /proc), quiet is no new
   * request for this gap (ms; 0: the turn alone); for a tool, prompt or resource template seen asking
   * for things together (core/calls/ask-patterns.ts), this gap plus twice the p99 of the gateway's
   * measured event-loop delay (gateway/quiet-gap.ts); at most `coalesceMs`.
   */
  coalesceQuietMs: z.int().min(0).max(5_000).default(1),
  /** Hard limit for one backend call, all rounds included. */
  callTimeoutMs: z
    .int()
    .min(1_000)
    .default(30 * 60_000),
  /** How long a call may wait for a free backend session. */
  sessionWaitMs: z.int().min(100).default(30_000),
  maxSessionsPerBackend: z.int().min(1).max(1024).default(16),
  /**
   * Sessions (stdio/SSE processes) one backend starts at once; calls beyond wait for the first session
   * ready for them, a freed one or the next started one (within `sessionWaitMs`). Starting many server
   * processes at once on a small machine makes every one of them slow, and all of them late. Default:
   * the machine's CPU count (`os.availableParallelism()`), at least 2.
   */
  maxSessionStarts: z.int().min(1).max(1024).optional(),
  /**
   * Sessions (stdio/SSE processes) one principal may hold at once on a backend, so one principal's
   * parked calls cannot starve the others. Default: half of the backend's sessions when several
   * principals are configured, no limit otherwise.
   */
  maxSessionsPerPrincipal: z.int().min(1).max(1024).optional(),
  idleSessionMs: z.int().min(1_000).default(60_000),
  /**
   * A call that has waited this long for its client's answer (elicitation, sampling, roots), holding a
   * backend session of its own (stdio, HTTP+SSE), gives that session up to a call that waits for one
   * when the backend has no other: it is cancelled (\`call_reclaimed\`; its retry is told why), the
   * longest-waiting first. A client that never answers holds a process until \`parkTimeoutMs\`
   * otherwise. 0: never.
   */
  reclaimParkedAfterMs: z.int().min(0).default(60_000),
  /** How often each backend's connection is pinged (0: never); see `hungAfterMs`. */
  healthCheckMs: z.int().min(0).default(15_000),
  /**
   * A backend silent on every exchange (no answer to a ping, no response, notification or request on
   * any of its sessions) for this long is taken for hung; a late ping alone never is.
   */
  hungAfterMs: z.int().min(500).max(3_600_000).default(30_000),
  /** The longest a list (tools, prompts, resources) waits for one backend, connecting included; then it is answered from cache or without it. */
  listTimeoutMs: z.int().min(100).max(600_000).default(10_000),
  roots: z.array(z.strictObject({ uri: z.string().startsWith('file://'), name: z.string().optional() })).default([]),
  apiKeys: z.array(apiKey).default([]),
  cacheTtlMs: z.int().min(0).default(10_000),
  cacheScope: z.enum(['public', 'private']).default('private'),
  toolNameSeparator: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,4}$/)
    .default('__'),
  instructions: z.string().optional(),
  /** This instance's id inside requestState; give each instance of a cluster its own. */
  instanceId: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/)
    .optional(),
  /**
   * Several instances behind one balancer: the call directory, round claims and quotas live in Redis,
   * and each instance keeps a heartbeat there. Without it everything stays in this process.
   */
  cluster: z
    .strictObject({
      redis: z.string().regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL'),
      /** This instance's id (default: `gateway.instanceId`, else one kept in `stateDir`). */
      instanceId: z
        .string()
        .regex(/^[A-Za-z0-9_.-]{1,64}$/)
        .optional(),
      /** Where the other instances reach this one (forwarded retries). */
      internalUrl: z.url({ protocol: /^https?$/ }).optional(),
      keyPrefix: z
        .string()
        .regex(/^[A-Za-z0-9_.:-]{1,64}$/)
        .default('mcpgw:'),
      heartbeatMs: z.int().min(100).max(60_000).default(2_000),
      /** How long a starting instance waits for Redis to answer at all; then it exits (1). Redis lost later is waited for. */
      startTimeoutMs: z.int().min(100).max(600_000).default(30_000),
    })
    .optional(),
  /**
   * OAuth 2.1 in front (MCP authorization): the gateway is a resource server that takes access tokens
   * (JWTs, RFC 9068) issued for `resource` by one of `authorizationServers`. API keys keep working beside it.
   */
  oauth: z
    .strictObject({
      /** This gateway's canonical resource URI (what clients ask tokens for, RFC 8707; every token's `aud`). */
      resource: z.url({ protocol: /^https?$/ }),
      authorizationServers: z.array(z.strictObject({ issuer: z.url({ protocol: /^https?$/ }), jwksUri: z.url({ protocol: /^https?$/ }).optional() })).min(1),
      requiredScopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'a scope token (RFC 6749 §3.3)')).default([]),
      scopesSupported: z.array(nonEmpty).optional(),
      algorithms: z
        .array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']))
        .min(1)
        .default(['RS256', 'PS256', 'ES256', 'EdDSA']),
      clockToleranceSeconds: z.int().min(0).max(300).default(30),
      /**
       * Opaque (non-JWT) access tokens are checked at this RFC 7662 introspection endpoint, as the
       * confidential client `clientId` (secret from `clientSecretEnv`); an answer is cached for at most
       * `cacheSeconds` and never past the token's `exp`. `issuer`: the principal's issuer when the
       * answer names none (default: the first authorization server).
       */
      introspection: z
        .strictObject({
          url: z.url({ protocol: /^https?$/ }),
          clientId: nonEmpty,
          clientSecretEnv: nonEmpty,
          issuer: z.url({ protocol: /^https?$/ }).optional(),
          cacheSeconds: z.int().min(0).max(3_600).default(60),
          /** Accept an answer without `aud` (an authorization server without resource indicators); default: `aud` must name `resource`. */
          audienceOptional: z.boolean().default(false),
        })
        .optional(),
      /** Require the JWT header `typ: at+jwt` (RFC 9068 §4); off by default, as many issuers mark access tokens `JWT`. */
      requireAccessTokenType: z.boolean().default(false),
      /** Deadline of one metadata or key-set fetch, and the least time between two key-set fetches for an unknown kid. */
      timeoutMs: z.int().min(100).max(60_000).default(5_000),
      cooldownMs: z.int().min(0).max(3_600_000).default(30_000),
    })
    .optional(),
  /**
   * Who may use what: rules allowing or denying servers, tools, prompts and resources (glob patterns)
   * to principals, groups and token scopes (core/access-policy.ts). None: everyone everything.
   */
  policy: z
    .strictObject({
      groups: z.record(nonEmpty, z.array(nonEmpty)).default({}),
      rules: z.array(policyRule).default([]),
      default: z.enum(['allow', 'deny']).default('allow'),
    })
    .optional(),
  /**
   * The admin listener (off unless given): `/metrics` (Prometheus) and the live admin page, on a port of
   * its own, never the client port. `keyEnv` names the variable holding its key (a bearer token, or the
   * password of HTTP basic auth in a browser); required unless it listens on loopback.
   */
  admin: z
    .strictObject({
      host: nonEmpty.default('127.0.0.1'),
      port: z.int().min(0).max(65_535).default(8788),
      keyEnv: nonEmpty.optional(),
      /** Hostnames accepted in Host besides localhost (and the bind address), as `allowedHosts` is for the client port. */
      allowedHosts: z.array(nonEmpty).default([]),
      /** How often the page's sections are sent again, and how often a chart sample is taken (60 are kept). */
      refreshMs: z.int().min(100).max(60_000).default(2_000),
      sampleMs: z.int().min(100).max(300_000).default(5_000),
      /** Principals counted by name in `mcp_gateway_principal_requests_total` (every other is `other`); none: no such metric. */
      principals: z.array(nonEmpty).max(100).default([]),
    })
    .optional(),
  /** A directory the gateway may write (it keeps its generated instance id there across restarts). */
  stateDir: nonEmpty.optional(),
  /**
   * How long a client has to send a whole request, head and body, on the Node server (its
   * `requestTimeout`): a body trickled byte by byte is cut off past it (408), where Node allows 300 s.
   * Answers are not bounded by it (an SSE stream lives on once its request has arrived).
   */
  requestTimeoutMs: z.int().min(1_000).max(300_000).default(30_000),
  /**
   * How long the Node server keeps a client's idle connection open (Node's `keepAliveTimeout`, 5 s by
   * default). Kept longer than the idle timeout of the balancer in front (65 s is above a 60 s one), so
   * the balancer never sends a request on a connection the gateway is closing (a 502 for that request).
   * At least 1 s (Node reads 0 as "never close").
   */
  keepAliveTimeoutMs: z.int().min(1_000).max(600_000).default(65_000),
  /**
   * How long a client may leave what the gateway sends it untaken, once its side of the connection is
   * full, before the connection is closed (nginx's `send_timeout`; node-send-timeout.ts). A client that
   * reads, however slowly, is never cut, nor is a connection with nothing to send.
   */
  sendTimeoutMs: z.int().min(1_000).max(3_600_000).default(60_000),
  /**
   * Client connections the Node server holds at once (its `maxConnections`): one more is closed as it
   * comes, so idle connections cannot take every file descriptor the backends and parked calls need.
   * Default: half the process's open-file limit, read at start (none where it cannot be read).
   */
  maxConnections: z.int().min(16).optional(),
  /** On SIGTERM: how long calls in flight and parked calls may still finish before they are cancelled. */
  drainTimeoutMs: z.int().min(0).max(3_600_000).default(30_000),
  /**
   * Requests on `/mcp` (and the draft endpoint) whose work has not finished, per principal and in
   * total, on each instance: past them a request is refused at once (429 `principal_limit`, 503
   * `total_limit`). One connection may pipeline as many requests as it likes, and each is started.
   */
  maxRequestsInFlightPerPrincipal: z.int().min(1).default(1_024),
  maxRequestsInFlightTotal: z.int().min(1).default(8_192),
  /** Open `subscriptions/listen` streams allowed per principal and in total. */
  maxListenPerPrincipal: z.int().min(1).default(16),
  maxListenTotal: z.int().min(1).default(256),
  /** Legacy clients (2025-era sessions on the same path): how long an idle session is kept, and how many at once. */
  legacySessionIdleMs: z
    .int()
    .min(1_000)
    .default(30 * 60_000),
  maxLegacySessions: z.int().min(1).default(256),
  /**
   * A legacy session's call that nothing can be streamed for (fronts/legacy/direct-call.ts) is answered
   * as JSON when it ends within this; past it, on a stream with a resumption id and keep-alives.
   */
  legacyJsonAnswerMs: z.int().min(0).max(60_000).default(1_000),
  /**
   * Legacy sessions (either transport: streamable HTTP, and `/sse` streams) one principal may hold on
   * this instance; at the bound its least recently used idle session is closed to make room.
   */
  maxLegacySessionsPerPrincipal: z.int().min(1).default(64),
  /** Rate limits per principal (off unless given; README "Rate limits"). */
  rateLimits: rateLimits.optional(),
  /** Tasks: calls promoted for clients that declare the extension io.modelcontextprotocol/tasks. */
  tasks: z
    .strictObject({
      /** A tools/call still running after this long becomes a task (clients that declared the extension only). */
      promoteAfterMs: z.int().min(0).max(3_600_000).default(5_000),
      /** How long a task may run; past it, its call is cancelled. */
      ttlMs: z.int().min(1_000).default(3_600_000),
      /** How long a finished task stays readable. */
      retentionMs: z.int().min(1_000).default(600_000),
      /** The poll interval suggested to clients. */
      pollIntervalMs: z.int().min(10).default(1_000),
      maxPerPrincipal: z.int().min(1).default(64),
      maxTotal: z.int().min(1).default(1_024),
    })
    .default({ promoteAfterMs: 5_000, ttlMs: 3_600_000, retentionMs: 600_000, pollIntervalMs: 1_000, maxPerPrincipal: 64, maxTotal: 1_024 }),
  proxyTools: proxyTools.default(proxyTools.parse({})),
  /**
   * Session core behind an edge handler (issue 31; CLI `--core`): legacy servers only (a 2026-07-28
   * server is listed at the edge directly), and each also served alone, unprefixed, at
   * `<path>/<name>` (the proxy tools at `<path>/proxy`), so the edge lists each as a server of its own
   * and does the aggregation.
   */
  core: z.boolean().default(false),
  /**
   * Sampling requests from backends, per client scope (a principal, or a legacy session or workspace in
   * it; seed 003): at most `maxConcurrent` outstanding, each answered within `timeoutMs`, and a circuit
   * breaker that refuses them (-32000) for `openMs` after `failureThreshold` failures in a row.
   */
  sampling: z
    .strictObject({
      maxConcurrent: z.int().min(1).max(1_000).default(4),
      timeoutMs: z.int().min(100).max(3_600_000).default(60_000),
      failureThreshold: z.int().min(1).max(100).default(3),
      openMs: z.int().min(100).max(3_600_000).default(30_000),
    })
    .default({ maxConcurrent: 4, timeoutMs: 60_000, failureThreshold: 3, openMs: 30_000 }),
});
