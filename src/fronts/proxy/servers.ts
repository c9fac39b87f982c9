/**
 * The servers the proxy tools reach: the configured backends, and the ones `add_server` added (shared
 * by every scope, as seed 000's "Shared server configuration"; connections stay per principal as the
 * core's isolation rules say). Adding is off unless the operator gave an allow-list: a URL must match
 * one of its patterns, a command must be one of its commands exactly; nothing outside it is started or
 * reached.
 */
import { parseServerEntry, type ServerConfig } from '../../config.js';
import type { BackendPort } from '../../core/backend/port.js';
import { ToolError, TOOL_ERRORS } from './respond.js';

export interface AddServerAllowList {
  /** URL patterns; `*` matches any run of characters. */
  readonly urls: readonly string[];
  /** Executables that may be started (exact). */
  readonly commands: readonly string[];
}

export interface ServerEntry {
  readonly name: string;
  readonly source: 'config' | 'added';
  readonly backend: BackendPort;
}

export interface AddServer {
  readonly name: string;
  readonly url?: string | undefined;
  readonly transport?: 'streamable-http' | 'sse' | undefined;
  readonly command?: string | undefined;
  readonly args?: readonly string[] | undefined;
}

function patternToRegExp(pattern: string): RegExp {
  const escaped = pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return new RegExp(`^${escaped.join('.*')}$`);
}

export class ProxyServers {
  readonly #servers = new Map<string, ServerEntry>();
  readonly #create: (config: ServerConfig) => BackendPort;
  readonly #urls: readonly RegExp[];
  readonly #commands: ReadonlySet<string>;

  constructor(configured: readonly BackendPort[], create: (config: ServerConfig) => BackendPort, allow: AddServerAllowList) {
    for (const backend of configured) this.#servers.set(backend.name, { name: backend.name, source: 'config', backend });
    this.#create = create;
    this.#urls = allow.urls.map(patternToRegExp);
    this.#commands = new Set(allow.commands);
  }

  /** True when `add_server` may add anything at all. */
  get canAdd(): boolean {
    return this.#urls.length > 0 || this.#commands.size > 0;
  }

  get(name: string): ServerEntry | undefined {
    return this.#servers.get(name);
  }

  list(): ServerEntry[] {
    return [...this.#servers.values()];
  }

  /** Adds a server (refused outside the allow-list, or when the name is taken); resolves once it made its first connection attempt. */
  async add(req: AddServer): Promise<ServerEntry> {
    if (!this.canAdd)
      throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, 'add_server is off: the operator allowed no URLs or commands (gateway.proxyTools.addServer)');
    if (this.#servers.has(req.name)) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, `A server named ${req.name} exists already`);
    if ((req.url === undefined) === (req.command === undefined)) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, 'Give exactly one of url or command');
    if (req.url !== undefined && !this.#urls.some((re) => re.test(req.url!))) {
      throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, 'This URL is not on the allow-list (gateway.proxyTools.addServer.urls)', { url: req.url });
    }
    if (req.command !== undefined && !this.#commands.has(req.command)) {
      throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, 'This command is not on the allow-list (gateway.proxyTools.addServer.commands)', { command: req.command });
    }
    const entry =
      req.url !== undefined ? { url: req.url, ...(req.transport ? { transport: req.transport } : {}) } : { command: req.command, args: [...(req.args ?? [])] };
    const parsed = parseServerEntry(req.name, entry);
    if (!parsed.ok) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, parsed.error.join('; '));
    const backend = this.#create(parsed.value);
    const added: ServerEntry = { name: req.name, source: 'added', backend };
    this.#servers.set(req.name, added);
    await backend.start();
    return added;
  }

  /** Removes an added server and closes it (its calls fail). Configured servers stay. */
  async remove(name: string): Promise<void> {
    const entry = this.#servers.get(name);
    if (!entry) throw new ToolError(TOOL_ERRORS.SERVER_NOT_FOUND, `No server named ${name}`);
    if (entry.source === 'config')
      throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, `${name} comes from the gateway's configuration; only servers added with add_server can be removed`);
    this.#servers.delete(name);
    await entry.backend.close();
  }

  /** Closes the added servers (the configured ones are the gateway's to close). */
  async close(): Promise<void> {
    const added = this.list().filter((e) => e.source === 'added');
    for (const e of added) this.#servers.delete(e.name);
    await Promise.all(added.map((e) => e.backend.close()));
  }
}
