/**
 * Gateway configuration: the `mcpServers` map users already have for Claude Desktop and similar hosts
 * (stdio entries `{command,args,env,cwd}`, HTTP entries `{url,headers,transport}`) plus an optional
 * `gateway` section. `parseConfig` validates everything at once and lists every problem; the result is
 * frozen. Environment variables are passed in by the entry point.
 */
import { ambiguousNames, branchIssues, takeOtherKindKeys } from './config-diagnostics.js';
import * as z from 'zod/v4';
import { type Result, ok, err } from './util/result.js';
import { expandVariables, type VariableContext } from './util/expand-vars.js';

const nonEmpty = z.string().min(1);

/**
 * Tasks (extension io.modelcontextprotocol/tasks) per backend: when its calls are promoted, and per
 * tool whether a task is never used, allowed or required (`required`: a client without the extension
 * gets -32021). Tool names are the backend's own.
 */
const taskSupport = z.enum(['forbidden', 'optional', 'required']);
const serverTasks = z.strictObject({
  /** A call still running after this long is promoted to a task (default: `gateway.tasks.promoteAfterMs`). */
  promoteAfterMs: z.int().min(0).max(3_600_000).optional(),
  tools: z
    .record(
      nonEmpty,
      z.strictObject({
        support: taskSupport.optional(),
        promoteAfterMs: z.int().min(0).max(3_600_000).optional(),
      }),
    )
    .default({}),
});

const stdioServer = z.strictObject({
  command: nonEmpty,
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: nonEmpty.optional(),
  /** Gateway extension: how many backend sessions (processes) this server may have at once. */
  maxSessions: z.int().min(1).max(1024).optional(),
  disabled: z.boolean().optional(),
  isolation: z.enum(['principal', 'shared']).default('principal'),
  /** Roots for this server's session-level `roots/list` (overrides `gateway.roots`). */
  roots: z.array(z.strictObject({ uri: z.string().startsWith('file://'), name: z.string().optional() })).optional(),
  /** Quiet time after `initialize` before a new session takes a call (requests a server sends on its own at start-up then belong to no call). */
  settleMs: z.int().min(0).max(10_000).optional(),
  /** Idle sessions kept ready per principal and capability set (stdio/SSE; default 1). */
  spareSessions: z.int().min(0).max(16).optional(),
  /** How long a call of this server waits for a client's answer before it is cancelled (default: `requestStateTtlSeconds`); frees its session sooner. */
  parkTimeoutMs: z.int().min(1_000).optional(),
  /** Silence on every exchange after which this server is taken for hung (default: `gateway.hungAfterMs`). */
  hungAfterMs: z.int().min(500).max(3_600_000).optional(),
  tasks: serverTasks.optional(),
});

/** Space-separated scope tokens (RFC 6749 §3.3). */
const scopeList = z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/, 'space-separated scope tokens (RFC 6749 §3.3)');

/**
 * The gateway's own OAuth client toward an HTTP backend (never the caller's token): client credentials
 * (RFC 6749 §4.4, `client_secret_basic`) at `tokenUrl`, for `resource` (RFC 8707; default: the
 * backend's `url`). The secret is read from the environment variable `clientSecretEnv`.
 */
const backendAuth = z.strictObject({
  tokenUrl: z.url({ protocol: /^https?$/ }),
  clientId: nonEmpty,
  clientSecretEnv: nonEmpty,
  scope: scopeList.optional(),
  resource: z.url({ protocol: /^https?$/ }).optional(),
  /** Deadline of one token request. */
  timeoutMs: z.int().min(100).max(60_000).default(10_000),
});

const httpServer = z.strictObject({
  url: z.url({
    protocol: /^https?$/,
    error: (iss) => (iss.input === undefined ? undefined : 'expected an http:// or https:// URL (an HTTP server; the gateway reaches no other kind)'),
  }),
  // HTTP header values are byte strings: a placeholder such as "Bearer …" would fail only at connect time.
  headers: z
    .record(
      z.string(),
      z
        .string()
        .refine(
          (v) => /^[\t\x20-\x7e\x80-\xff]*$/.test(v),
          'header values must be printable Latin-1 text (no "…" or other Unicode characters, no line breaks)',
        ),
    )
    .default({}),
  transport: z.enum(['streamable-http', 'sse']).default('streamable-http'),
  maxSessions: z.int().min(1).max(1024).optional(),
  disabled: z.boolean().optional(),
  /**
   * Whose calls may share a backend session. "principal" (default): a session serves one principal
   * only, so what the backend keeps per session (roots, subscriptions, log level, a login) is never
   * seen by another. "shared": any principal's calls, for servers that keep nothing per session.
   */
  isolation: z.enum(['principal', 'shared']).default('principal'),
  /** Roots for this server's session-level `roots/list` (overrides `gateway.roots`). */
  roots: z.array(z.strictObject({ uri: z.string().startsWith('file://'), name: z.string().optional() })).optional(),
  /** Quiet time after `initialize` before a new session takes a call (requests a server sends on its own at start-up then belong to no call). */
  settleMs: z.int().min(0).max(10_000).optional(),
  /** Idle sessions kept ready per principal and capability set (stdio/SSE; default 1). */
  spareSessions: z.int().min(0).max(16).optional(),
  /** How long a call of this server waits for a client's answer before it is cancelled (default: `requestStateTtlSeconds`); frees its session sooner. */
  parkTimeoutMs: z.int().min(1_000).optional(),
  /** Silence on every exchange after which this server is taken for hung (default: `gateway.hungAfterMs`). */
  hungAfterMs: z.int().min(500).max(3_600_000).optional(),
  /**
   * streamable-http only. "shared": many calls per session, backend requests routed by the stream they
   * arrive on. "exclusive": one input-capable call per session, for servers that send a call's requests
   * outside its stream (e.g. v1 `server.elicitInput()` without `relatedRequestId`).
   */
  sessionMode: z.enum(['shared', 'exclusive']).default('shared'),
  /** Set when the server speaks MCP 2026-07-28 (stateless): no backend session is held. */
  protocol: z.enum(['legacy', '2026-07-28']).default('legacy'),
  tasks: serverTasks.optional(),
  /** A bearer token the gateway fetches for this backend (OAuth client credentials); see `backendAuth`. */
  auth: backendAuth.optional(),
  /**
   * 2026-07-28 servers: each call and task request names its caller in `Mcp-Gateway-Principal` (for a
   * session core behind an edge handler, whose key for this gateway `delegates`), so the core keeps
   * each caller's calls, sessions and workspaces apart. Lists go without (they are the same for all).
   */
  forwardPrincipal: z.boolean().default(false),
});

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

const gatewaySection = z.strictObject({
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
  /** On SIGTERM: how long calls in flight and parked calls may still finish before they are cancelled. */
  drainTimeoutMs: z.int().min(0).max(3_600_000).default(30_000),
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

const fileSchema = z.strictObject({
  mcpServers: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'server names use A-Z a-z 0-9 _ . - (1-64 chars)'), z.union([stdioServer, httpServer])),
  gateway: gatewaySection.default(gatewaySection.parse({})),
});

/** The top-level keys the gateway reads; a host file's others are its own settings. */
const TOP_LEVEL_KEYS = new Set(['mcpServers', 'gateway']);

/** Keys other hosts put in server entries that mean nothing to a gateway (tool approval is the client's business). */
const IGNORED_ENTRY_KEYS = ['autoApprove', 'alwaysAllow', 'timeout', 'description', 'notes', 'envFile'];

/** `type` values of Claude Code, VS Code, Cursor and others → our entry shape. */
const TYPE_TO_TRANSPORT: Record<string, 'stdio' | 'streamable-http' | 'sse'> = {
  stdio: 'stdio',
  http: 'streamable-http',
  'streamable-http': 'streamable-http',
  streamableHttp: 'streamable-http',
  sse: 'sse',
};

/**
 * Brings the host config dialects in line with ours before validation: `servers` (VS Code) for
 * `mcpServers`, an entry's `type`, and keys that only concern the host (ignored, with a note).
 * Entries with neither `command` nor `url` are a problem named as such.
 */
function normalizeFile(input: unknown, notes: string[], problems: string[]): unknown {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  const file = { ...(input as Record<string, unknown>) };
  if (file['mcpServers'] === undefined && file['servers'] !== undefined) {
    file['mcpServers'] = file['servers'];
    notes.push('config: read "servers" as "mcpServers"');
  }
  delete file['servers'];
  if (file['inputs'] !== undefined) {
    notes.push('config: "inputs" (host prompts for secrets) is ignored; give values in "env" or "headers"');
    delete file['inputs'];
  }
  // A host's own settings beside its servers (Claude Desktop's globalShortcut, say): one line, not a refusal.
  const hostKeys = Object.keys(file).filter((k) => !TOP_LEVEL_KEYS.has(k));
  if (hostKeys.length) {
    notes.push(`config: ignored top-level keys (the host's own settings): ${hostKeys.join(', ')}`);
    for (const k of hostKeys) delete file[k];
  }
  const servers = file['mcpServers'];
  if (!servers || typeof servers !== 'object' || Array.isArray(servers)) return file;
  const out: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(servers as Record<string, unknown>)) {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      out[name] = raw;
      continue;
    }
    const entry = { ...(raw as Record<string, unknown>) };
    for (const key of IGNORED_ENTRY_KEYS) {
      if (key in entry) {
        notes.push(`mcpServers.${name}.${key}: ignored (it concerns the host, not the gateway)`);
        delete entry[key];
      }
    }
    const type = entry['type'];
    delete entry['type'];
    if (type !== undefined) {
      const transport = typeof type === 'string' && Object.hasOwn(TYPE_TO_TRANSPORT, type) ? TYPE_TO_TRANSPORT[type] : undefined;
      if (!transport) problems.push(`mcpServers.${name}.type: "${String(type)}" is not one of ${Object.keys(TYPE_TO_TRANSPORT).join(', ')}`);
      else if (transport !== 'stdio' && entry['command'] !== undefined)
        problems.push(`mcpServers.${name}.type: "${String(type)}" is for a server with a "url" (HTTP); this one has a "command" (stdio)`);
      else if (transport !== 'stdio' && entry['transport'] === undefined) entry['transport'] = transport;
    }
    problems.push(...takeOtherKindKeys(name, entry, { stdio: stdioServer.shape, http: httpServer.shape }));
    if (entry['command'] === undefined && entry['url'] === undefined && entry['disabled'] !== true) {
      problems.push(`mcpServers.${name}: give either "command" (a server the gateway starts over stdio) or "url" (an HTTP server)`);
    }
    out[name] = entry;
  }
  file['mcpServers'] = out;
  return file;
}

/** The fields of a server entry whose strings may hold variables. */
const EXPANDED_FIELDS = ['command', 'args', 'env', 'cwd', 'url', 'headers'];

/** Expands the variables in each server entry's command, args, env, cwd, url and headers (problems named by path). */
function expandServerVariables(file: unknown, vars: VariableContext, problems: string[]): unknown {
  const servers = (file as { mcpServers?: unknown } | null)?.mcpServers;
  if (!servers || typeof servers !== 'object' || Array.isArray(servers)) return file;
  const expand = (value: unknown, path: string): unknown => {
    if (typeof value === 'string') {
      const found: string[] = [];
      const out = expandVariables(value, vars, found);
      for (const f of found) problems.push(`${path}: ${f}`);
      return out;
    }
    if (Array.isArray(value)) return value.map((v, i) => expand(v, `${path}.${i}`));
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v, `${path}.${k}`)]));
    return value;
  };
  for (const [name, entry] of Object.entries(servers as Record<string, unknown>)) {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry) || (entry as { disabled?: unknown }).disabled === true) continue;
    const e = entry as Record<string, unknown>;
    for (const field of EXPANDED_FIELDS) if (e[field] !== undefined) e[field] = expand(e[field], `mcpServers.${name}.${field}`);
  }
  return file;
}

/** Validates one server entry (a server `add_server` adds) as the config file's entries are validated. */
export function parseServerEntry(name: string, entry: unknown): Result<ServerConfig, string[]> {
  const notes: string[] = [];
  const problems: string[] = [];
  const normalized = normalizeFile({ mcpServers: { [name]: entry } }, notes, problems) as { mcpServers: Record<string, unknown> };
  if (problems.length) return err(problems);
  const parsed = z.union([stdioServer, httpServer]).safeParse(normalized.mcpServers[name]);
  if (!parsed.success) return err(parsed.error.issues.map((i) => `${i.path.join('.') || name}: ${i.message}`));
  const data = parsed.data;
  // A client may not add a server with the gateway's credentials: its secret would go to a token URL the client chose.
  if ('auth' in data && data.auth !== undefined) return err([`${name}.auth: a server added at run time cannot use the gateway's OAuth credentials`]);
  return ok('command' in data ? { ...data, kind: 'stdio', name } : { ...data, kind: 'http', name });
}

export type StdioServerConfig = z.infer<typeof stdioServer> & { kind: 'stdio'; name: string };
export type HttpServerConfig = z.infer<typeof httpServer> & { kind: 'http'; name: string };
export type ServerConfig = StdioServerConfig | HttpServerConfig;
export type GatewaySettings = Omit<z.infer<typeof gatewaySection>, 'apiKeys'>;

/** The validated, frozen configuration. */
export interface GatewayConfig {
  readonly servers: readonly ServerConfig[];
  readonly gateway: Readonly<GatewaySettings>;
  /** API key → principal. Empty: everyone is the anonymous principal. */
  readonly apiKeys: ReadonlyMap<string, string>;
  /** The principals whose keys `delegate` (name their own callers in `Mcp-Gateway-Principal`). */
  readonly delegating: ReadonlySet<string>;
  /** The admin listener's key (from `gateway.admin.keyEnv`); undefined: no key asked (loopback only). */
  readonly adminKey?: string | undefined;
  /** OAuth client secrets by the variable that holds them (`clientSecretEnv` of backend `auth` and of introspection). */
  readonly secrets: ReadonlyMap<string, string>;
  /** What was read leniently (host-only keys ignored, aliases), for an info line at start-up. */
  readonly notes: readonly string[];
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}

/**
 * Validates a parsed config file. `env` resolves `keyEnv` references and the variables of server
 * entries (`${VAR}`, `${VAR:-default}`, `${env:VAR}`); `where` gives `${workspaceFolder}` (the config
 * file's folder) and `${userHome}`.
 * Returns every problem found, each prefixed with its JSON path.
 */
export function parseConfig(
  input: unknown,
  env: Readonly<Record<string, string | undefined>> = {},
  where: { readonly configDir?: string; readonly userHome?: string } = {},
): Result<GatewayConfig, string[]> {
  const notes: string[] = [];
  const problems: string[] = [];
  const vars: VariableContext = { env, workspaceFolder: where.configDir, userHome: where.userHome };
  const parsed = fileSchema.safeParse(expandServerVariables(normalizeFile(input, notes, problems), vars, problems));
  if (!parsed.success) {
    // An entry already reported as having neither command nor url needs no second, vaguer line.
    const named = new Set(problems.map((p) => p.split(':')[0]));
    const issues = parsed.error.issues.flatMap(branchIssues).map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
    return err([...problems, ...issues.filter((i) => !named.has(i.split(':')[0]))]);
  }
  if (problems.length) return err(problems);
  const servers: ServerConfig[] = [];
  for (const [name, entry] of Object.entries(parsed.data.mcpServers)) {
    if (entry.disabled) continue;
    if ('command' in entry) servers.push({ ...entry, kind: 'stdio', name });
    else servers.push({ ...entry, kind: 'http', name });
  }
  if (servers.length === 0) problems.push('mcpServers: configure at least one enabled server');
  problems.push(...ambiguousNames(servers, parsed.data.gateway.toolNameSeparator));
  if (parsed.data.gateway.core) problems.push(...coreProblems(servers, parsed.data.gateway.proxyTools.enabled));
  // Rate limits: a per-server limit must name a configured server.
  for (const name of Object.keys(parsed.data.gateway.rateLimits?.servers ?? {}))
    if (!Object.hasOwn(parsed.data.mcpServers, name)) problems.push(`gateway.rateLimits.servers.${name}: no such server in mcpServers`);
  const { apiKeys: keyEntries, ...gateway } = parsed.data.gateway;
  const apiKeys = new Map<string, string>();
  const delegating = new Set<string>();
  keyEntries.forEach((k, i) => {
    if (k.delegates) delegating.add(k.principal);
    const value = k.key ?? (k.keyEnv !== undefined ? env[k.keyEnv] : undefined);
    if (!value) problems.push(`gateway.apiKeys.${i}: environment variable ${k.keyEnv ?? '?'} is not set`);
    else if (value.length < 16) problems.push(`gateway.apiKeys.${i}: the key must be at least 16 characters`);
    else if (apiKeys.has(value)) problems.push(`gateway.apiKeys.${i}: the same key is listed twice`);
    else apiKeys.set(value, k.principal);
  });
  const adminKey = adminKeyOf(gateway.admin, env, problems);
  checkPolicyGroups(gateway.policy, problems);
  const secrets = clientSecretsOf(servers, gateway.oauth, env, problems);
  if (problems.length) return err(problems);
  for (const p of delegating) {
    if (keyEntries.some((k) => k.principal === p && !k.delegates)) problems.push(`gateway.apiKeys: principal ${p} has keys that delegate and keys that do not`);
    // `<p>/<caller>` is what the front's callers run as: no other principal may look like one.
    for (const k of keyEntries)
      if (k.principal.startsWith(`${p}/`)) problems.push(`gateway.apiKeys: principal ${k.principal} could be a caller named by ${p}, whose key delegates`);
  }
  if (problems.length) return err(problems);
  return ok(deepFreeze({ servers, gateway, apiKeys, delegating, adminKey, secrets, notes }) as GatewayConfig);
}

/** What a session core (`gateway.core`) cannot serve: 2026-07-28 servers, and names its other paths take. */
function coreProblems(servers: readonly ServerConfig[], proxyTools: boolean): string[] {
  const problems: string[] = [];
  for (const s of servers) {
    if (s.kind === 'http' && s.protocol === '2026-07-28')
      problems.push(`mcpServers.${s.name}: a session core serves legacy servers; list this 2026-07-28 server at the edge directly`);
    if (s.name === 'draft' || (proxyTools && s.name === 'proxy'))
      problems.push(
        `mcpServers.${s.name}: with gateway.core each server is served at <path>/<name>, where this name is taken (by the draft dialect or the proxy tools)`,
      );
  }
  return problems;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** True for a listen address only this machine reaches. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host);
}

/** The admin key from its variable; an admin listener off loopback must have one. */
function adminKeyOf(admin: GatewaySettings['admin'], env: Readonly<Record<string, string | undefined>>, problems: string[]): string | undefined {
  if (!admin) return undefined;
  if (admin.keyEnv === undefined) {
    if (!isLoopback(admin.host)) problems.push(`gateway.admin: listening on ${admin.host} (not loopback) needs a key: set keyEnv`);
    return undefined;
  }
  const value = env[admin.keyEnv];
  if (!value) problems.push(`gateway.admin.keyEnv: environment variable ${admin.keyEnv} is not set`);
  else if (value.length < 16) problems.push('gateway.admin.keyEnv: the key must be at least 16 characters');
  return value || undefined;
}

/** A rule may name only groups the policy defines (a typo would otherwise match no one, silently). */
function checkPolicyGroups(policy: GatewaySettings['policy'], problems: string[]): void {
  policy?.rules.forEach((rule, i) => {
    for (const g of rule.groups ?? [])
      if (!Object.hasOwn(policy.groups, g)) problems.push(`gateway.policy.rules.${i}.groups: no group named ${g} in gateway.policy.groups`);
  });
}

/** The client secrets `clientSecretEnv` names (backend `auth`, introspection); a backend with `auth` sends no static Authorization. */
function clientSecretsOf(
  servers: readonly ServerConfig[],
  oauth: GatewaySettings['oauth'],
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): Map<string, string> {
  const secrets = new Map<string, string>();
  const take = (variable: string, path: string): void => {
    const value = env[variable];
    if (value) secrets.set(variable, value);
    else problems.push(`${path}.clientSecretEnv: environment variable ${variable} is not set`);
  };
  for (const s of servers) {
    if (s.kind !== 'http' || !s.auth) continue;
    take(s.auth.clientSecretEnv, `mcpServers.${s.name}.auth`);
    if (Object.keys(s.headers).some((h) => h.toLowerCase() === 'authorization'))
      problems.push(`mcpServers.${s.name}: give either "auth" or an Authorization header, not both`);
  }
  if (oauth?.introspection) take(oauth.introspection.clientSecretEnv, 'gateway.oauth.introspection');
  return secrets;
}
