/**
 * What every proxy tool handler gets (its scope, the proxy tool's own call, the gateway's parts), and
 * the small lookups they share: the server a `server` argument names, and the capabilities the gateway
 * declares when it calls a backend for the proxy tools.
 */
import type { LoggingLevel } from '@modelcontextprotocol/server';
import { OPEN_ACCESS, type AccessPolicy, type CallerAccess, type PolicyKind } from '../../core/access-policy.js';
import type { BackendCall, BackendPort } from '../../core/backend/port.js';
import type { CallEngine } from '../../core/calls/call-engine.js';
import { inputCapabilitiesOf, type InputCapabilities } from '../../core/input-capabilities.js';
import { templateMatching } from '../../core/catalog.js';
import type { Shares } from '../../cluster/shares.js';
import type { Logger } from '../../log.js';
import type { TaskRegistry } from '../tasks/registry.js';
import { ToolError, TOOL_ERRORS } from './respond.js';
import type { Scope } from './scope.js';
import type { Scopes } from './scopes.js';
import type { ProxyServers } from './servers.js';
import type { WorkTracker } from './work.js';

export interface ProxySettings {
  readonly executeTimeoutMs: number;
  readonly awaitTimeoutMs: number;
  readonly maxAwaitTimeoutMs: number;
  /** `await_activity` calls waiting at once, per principal and in total. */
  readonly maxAwaitPerPrincipal: number;
  readonly maxAwaitTotal: number;
  /** Backend log lines at or above this level are `notification` events too, unless the request that started the work chose its own `logLevel`. */
  readonly logEventLevel: LoggingLevel;
}

export interface HandlerDeps {
  readonly engine: CallEngine;
  readonly registry: TaskRegistry;
  readonly scopes: Scopes;
  readonly tracker: WorkTracker;
  readonly servers: ProxyServers;
  readonly settings: ProxySettings;
  readonly logger: Logger;
  /** Where `await_activity` waits are counted (per principal and in total). */
  readonly shares: Shares;
  /** Who may use which server, tool, prompt and resource (`gateway.policy`); none: everyone everything. */
  readonly access?: AccessPolicy | undefined;
}

export interface ToolCtx {
  readonly scope: Scope;
  /** The proxy tool's own call. */
  readonly call: BackendCall;
}

export type Args = Record<string, unknown>;
export type Handler = (deps: HandlerDeps, ctx: ToolCtx, args: Args) => Promise<unknown>;

/**
 * What the gateway declares when it calls a backend for the proxy tools: every input request can be
 * held as a pending client action, so elicitation and sampling are always declared; roots only when
 * the client itself can answer them (there is no `respond_to_roots`).
 */
export function innerCapabilities(client: InputCapabilities): Record<string, unknown> {
  return { elicitation: { form: {}, url: {} }, sampling: {}, ...(client.roots ? { roots: {} } : {}) };
}

/** The backend of the server `name`; a TOOL_ERR_SERVER_NOT_FOUND tool error when there is none. */
export function serverOf(deps: HandlerDeps, name: unknown): BackendPort {
  const entry = deps.servers.get(String(name));
  if (!entry) throw new ToolError(TOOL_ERRORS.SERVER_NOT_FOUND, `No server named ${String(name)}; list_servers shows them`, { server: name });
  return entry.backend;
}

/** What the proxy tool's caller may use. */
export function accessOf(deps: HandlerDeps, ctx: ToolCtx): CallerAccess {
  return deps.access?.for({ principal: ctx.call.principal, tokenScopes: ctx.call.tokenScopes }) ?? OPEN_ACCESS;
}

/** Refuses what the policy does not allow the caller: a TOOL_ERR_NOT_ALLOWED tool error with `reason: "forbidden"`. */
export function checkAllowed(deps: HandlerDeps, ctx: ToolCtx, kind: PolicyKind, server: string, name: string): void {
  if (accessOf(deps, ctx).allows(kind, server, name)) return;
  const what = kind === 'tools' ? 'tool' : kind === 'prompts' ? 'prompt' : 'resource';
  throw new ToolError(
    TOOL_ERRORS.NOT_ALLOWED,
    `Forbidden: ${what} "${name}" of server "${server}" is not allowed to this caller by the gateway's policy (gateway.policy)`,
    {
      server,
      [what]: name,
      reason: 'forbidden',
    },
  );
}

/**
 * Refuses a resource read the policy does not allow the caller, as `/mcp` does: the URI in every form
 * it may be written in (`DEMO://readme` is `demo://readme`), and the template any of them matches on
 * its server (`allowsResource`).
 */
export async function checkResourceAllowed(deps: HandlerDeps, ctx: ToolCtx, server: string, backend: BackendPort, uri: string): Promise<void> {
  if (!deps.access) return;
  const caps = inputCapabilitiesOf(innerCapabilities(ctx.call.caps));
  const listOf = async (kind: 'resourceTemplates'): Promise<Record<string, unknown>[]> =>
    backend.list(kind, { caps }).catch(() => backend.cachedList(kind, caps) ?? []);
  const template = templateMatching(uri, await listOf('resourceTemplates'));
  if (accessOf(deps, ctx).allowsResource(server, uri, template)) return;
  throw new ToolError(
    TOOL_ERRORS.NOT_ALLOWED,
    `Forbidden: resource "${uri}" of server "${server}" is not allowed to this caller by the gateway's policy (gateway.policy)`,
    { server, resource: uri, reason: 'forbidden' },
  );
}

/** A `server` filter must name a server (a typo would otherwise look like "nothing happened"). */
export function knownServer(deps: HandlerDeps, server: unknown): void {
  if (server !== undefined) serverOf(deps, server);
}
