/**
 * The proxy tools (seeds 000/001) as one more backend of the catalog: so they are listed and called on
 * every front (2026-07-28 `/mcp`, the draft dialect, the legacy route) through the same engine and
 * dispatcher as any backend's tools, and an input request of the call behind `execute_tool` reaches the
 * client as the multi-round-trip translation of the proxy tool's own call (attend.ts).
 *
 * Its names are not prefixed beside other backends (`unprefixed`). Its state is per scope: the
 * `workspace` argument when given, else the caller's legacy session, else the principal.
 */
import * as z from 'zod/v4';
import type { BackendCall, BackendHealth, BackendOutcome, BackendPort, CatalogKind } from '../../core/backend/port.js';
import type { InputCapabilities } from '../../core/input-capabilities.js';
import { ProtocolError, WireCode, invalidParams } from '../../errors.js';
import { DIAGRAMS_RESOURCE, DIAGRAMS_TEXT, DIAGRAMS_URI } from './diagrams.js';
import { ToolError, TOOL_ERRORS, errorBody, respond } from './respond.js';
import type { Scope } from './scope.js';
import { HANDLERS, type HandlerDeps } from './tool-handlers.js';
import { TOOL_SCHEMAS, continuesWork, isProxyTool, toolDefinitions, type ProxyToolName } from './tools.js';

export interface ProxyBackendOptions extends HandlerDeps {
  /** The backend's name (for logs and task policy); its tools keep their own names. */
  readonly name: string;
}

/**
 * Every client sees every tool. The respond_to_* family is what a client that cannot be asked answers
 * with, and also how any client answers the input requests of a task (nobody is waiting on the task to
 * ask them as a round), so it is never hidden.
 */
const ALL_TOOLS = Object.keys(TOOL_SCHEMAS) as ProxyToolName[];

export class ProxyBackend implements BackendPort {
  readonly name: string;
  readonly unprefixed = true;
  readonly relaysInput = true;
  readonly continuesWork = continuesWork;
  readonly #deps: HandlerDeps;
  #tools: Record<string, unknown>[] | undefined;

  constructor(opts: ProxyBackendOptions) {
    this.name = opts.name;
    this.#deps = opts;
  }

  get up(): boolean {
    return true;
  }

  health(): BackendHealth {
    return { name: this.name, state: 'up', failures: 0 };
  }

  async start(): Promise<void> {}

  async capabilities(): Promise<Record<string, unknown>> {
    return { tools: {}, resources: {} };
  }

  async list(kind: CatalogKind, opts: { caps?: InputCapabilities } = {}): Promise<Record<string, unknown>[]> {
    return this.cachedList(kind, opts.caps);
  }

  cachedList(kind: CatalogKind, caps?: InputCapabilities): Record<string, unknown>[] {
    if (kind === 'resources') return [{ ...DIAGRAMS_RESOURCE }];
    if (kind !== 'tools') return [];
    return (this.#tools ??= toolDefinitions(ALL_TOOLS));
  }

  /** `execute_tool`'s call parks as long as its server's calls may (`parkTimeoutMs` of that server's entry). */
  parkTimeoutFor(params: Record<string, unknown>): number | undefined {
    const args = params['arguments'] as { server?: unknown } | undefined;
    if (params['name'] !== 'execute_tool' || typeof args?.server !== 'string') return undefined;
    return this.#deps.servers.get(args.server)?.backend.parkTimeoutMs;
  }

  async request(method: string): Promise<Record<string, unknown>> {
    throw new ProtocolError(WireCode.MethodNotFound, `The proxy tools do not serve ${method}`);
  }

  async call(call: BackendCall): Promise<BackendOutcome> {
    if (call.method === 'resources/read') {
      if (call.params['uri'] !== DIAGRAMS_URI) throw invalidParams(`Resource not found: ${String(call.params['uri'])}`, { uri: call.params['uri'] });
      return { kind: 'complete', result: { contents: [{ uri: DIAGRAMS_URI, mimeType: DIAGRAMS_RESOURCE.mimeType, text: DIAGRAMS_TEXT }] } };
    }
    if (call.method !== 'tools/call') throw new ProtocolError(WireCode.MethodNotFound, `The proxy tools do not serve ${call.method}`);
    const name = String(call.params['name']);
    if (!isProxyTool(name)) throw invalidParams(`Unknown tool: ${name}`);
    const parsed = TOOL_SCHEMAS[name].safeParse(call.params['arguments'] ?? {});
    let scope: Scope;
    try {
      scope = this.#scopeOf(call, parsed.success ? (parsed.data as { workspace?: string }).workspace : undefined);
    } catch (e) {
      return { kind: 'complete', result: { content: [{ type: 'text', text: JSON.stringify(errorBody(e as ToolError)) }], isError: true } };
    }
    try {
      if (!parsed.success) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, `Invalid arguments for ${name}: ${z.prettifyError(parsed.error)}`);
      const body = await HANDLERS[name](this.#deps, { scope, call }, parsed.data as Record<string, unknown>);
      // A backend's tool error (`result.isError`) is this tool's error too, so an agent that reads the
      // top-level flag sees it. await_activity reports pending client actions in its own body.
      const failed = (body as { result?: { isError?: unknown } } | undefined)?.result?.isError === true;
      // Events go only into answers a connected client reads (a closed one may never resume its stream).
      const connected = call.connection?.aborted !== true;
      return { kind: 'complete', result: respond(scope, this.#deps.tracker, body, failed, name !== 'await_activity', connected) };
    } catch (e) {
      if (e instanceof ToolError)
        return { kind: 'complete', result: respond(scope, this.#deps.tracker, errorBody(e), true, true, call.connection?.aborted !== true) };
      throw e;
    } finally {
      scope.lastUsed = Date.now();
    }
  }

  #scopeOf(call: BackendCall, workspace: string | undefined): Scope {
    if (workspace !== undefined) {
      const scope = this.#deps.scopes.workspace(call.principal, workspace);
      if (!scope)
        throw new ToolError(TOOL_ERRORS.SESSION_NOT_FOUND, 'Unknown workspace (it was never opened with new_workspace, or was forgotten after being unused)');
      return scope;
    }
    return this.#deps.scopes.get(call.principal, call.scope);
  }

  async close(): Promise<void> {
    await this.#deps.servers.close();
  }
}
