/**
 * The schema of one `mcpServers` entry, as hosts write it (Claude Desktop, VS Code, Cursor): a stdio
 * server `{command,args,env,cwd}` or an HTTP one `{url,headers,transport}`, with the gateway's own
 * per-server keys beside them. config.ts reads the file with it.
 */
import * as z from 'zod/v4';

export const nonEmpty = z.string().min(1);

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

/** The gateway's own keys of a server entry, of either kind. */
const gatewayKeys = {
  /** How many backend sessions (processes, for stdio) this server may have at once. */
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
  tasks: serverTasks.optional(),
};

export const stdioServer = z.strictObject({
  command: nonEmpty,
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: nonEmpty.optional(),
  ...gatewayKeys,
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

export const httpServer = z.strictObject({
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
  ...gatewayKeys,
  /**
   * streamable-http only. "shared": many calls per session, backend requests routed by the stream they
   * arrive on. "exclusive": one input-capable call per session, for servers that send a call's requests
   * outside its stream (e.g. v1 `server.elicitInput()` without `relatedRequestId`).
   */
  sessionMode: z.enum(['shared', 'exclusive']).default('shared'),
  /** Set when the server speaks MCP 2026-07-28 (stateless): no backend session is held. */
  protocol: z.enum(['legacy', '2026-07-28']).default('legacy'),
  /** A bearer token the gateway fetches for this backend (OAuth client credentials); see `backendAuth`. */
  auth: backendAuth.optional(),
  /**
   * 2026-07-28 servers: each call and task request names its caller in `Mcp-Gateway-Principal` (for a
   * session core behind an edge handler, whose key for this gateway `delegates`), so the core keeps
   * each caller's calls, sessions and workspaces apart. Lists go without (they are the same for all).
   */
  forwardPrincipal: z.boolean().default(false),
});
