/**
 * The proxy tools about servers (seed 001, server management; seed 000 category 3): `list_servers`,
 * `add_server` (answers the new server's capabilities and tools), `remove_server`, and
 * `get_server_status` (one server: its connection, working tasks and pending client actions).
 * Added and removed servers are announced to every scope (scopes.ts), to scopes made later too.
 */
import type { BackendPort } from '../../core/backend/port.js';
import { inputCapabilitiesOf } from '../../core/input-capabilities.js';
import { accessOf, innerCapabilities, serverOf, type Handler, type HandlerDeps, type ToolCtx } from './handler-deps.js';
import { ToolError, TOOL_ERRORS, pendingClientAction } from './respond.js';
import { serverInfo, whereIs } from './server-info.js';
import { pendingServer } from './task-tools.js';

/** The server's capabilities and tools as a caller of the proxy tools sees them (nothing while it is not connected). */
async function offer(deps: HandlerDeps, ctx: ToolCtx, backend: BackendPort): Promise<{ capabilities?: unknown; tools?: unknown[] }> {
  if (!backend.up) return {};
  const caps = inputCapabilitiesOf(innerCapabilities(ctx.call.caps));
  const [capabilities, tools] = await Promise.all([backend.capabilities(), backend.list('tools', { caps }).catch(() => backend.cachedList('tools', caps))]);
  return {
    ...(capabilities ? { capabilities } : {}),
    ...(tools
      ? {
          tools: tools.map((t) => ({
            name: t['name'],
            ...(t['title'] !== undefined ? { title: t['title'] } : {}),
            ...(t['description'] !== undefined ? { description: t['description'] } : {}),
            inputSchema: t['inputSchema'],
          })),
        }
      : {}),
  };
}

export const SERVER_HANDLERS = {
  async list_servers(deps, ctx) {
    const access = accessOf(deps, ctx);
    return {
      servers: deps.servers
        .list()
        .filter((s) => !access.deniesServer(s.name))
        .map(serverInfo),
    };
  },

  async add_server(deps, ctx, args) {
    const added = await deps.servers.add(args as never, ctx.call.principal);
    deps.scopes.announceAdded(added.name, { name: added.name, ...whereIs(added.config) });
    const offered = await offer(deps, ctx, added.backend);
    return {
      added: added.name,
      ...serverInfo(added),
      ...offered,
      ...(offered.tools !== undefined
        ? {}
        : {
            note: added.backend.up
              ? 'Its tools could not be listed just now: list_tools tries again.'
              : 'Not connected yet (it is retried with backoff): list_tools shows its tools once it is up.',
          }),
    };
  },

  async remove_server(deps, ctx, args) {
    const name = String(args['name']);
    await deps.servers.remove(name, ctx.call.principal);
    deps.scopes.announceRemoved(name, { name });
    return { removed: name };
  },

  async get_server_status(deps, ctx, args) {
    const name = String(args['server']);
    const backend = serverOf(deps, name);
    // A server the caller may not use is not listed to it, nor described.
    if (accessOf(deps, ctx).deniesServer(name))
      throw new ToolError(TOOL_ERRORS.SERVER_NOT_FOUND, `No server named ${name}; list_servers shows them`, { server: name });
    const entry = deps.servers.get(name)!;
    const capabilities = backend.up ? await backend.capabilities() : undefined;
    return {
      ...serverInfo(entry),
      ...(capabilities ? { capabilities } : {}),
      working_tasks: pendingServer(deps, ctx, name)[0]?.working_tasks ?? [],
      pending_client: pendingClientAction(deps.tracker.actions(ctx.scope).filter((a) => a.server === name)),
    };
  },
} satisfies Record<'list_servers' | 'add_server' | 'remove_server' | 'get_server_status', Handler>;
