/**
 * Gateway configuration: the `mcpServers` map users already have for Claude Desktop and similar hosts
 * (stdio entries `{command,args,env,cwd}`, HTTP entries `{url,headers,transport}`) plus an optional
 * `gateway` section (their schemas: config-servers.ts, config-gateway.ts). `parseConfig` validates
 * everything at once and lists every problem; the result is frozen. Environment variables are passed
 * in by the entry point.
 */
import { ambiguousNames, branchIssues, takeOtherKindKeys } from './config-diagnostics.js';
import * as z from 'zod/v4';
import { gatewaySection } from './config-gateway.js';
import { httpServer, stdioServer } from './config-servers.js';
import { type Result, ok, err } from './util/result.js';
import { expandVariables, type VariableContext } from './util/expand-vars.js';

export { PRINCIPAL_HEADER } from './config-gateway.js';

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
