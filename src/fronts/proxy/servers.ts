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
  /** URL patterns; `*` matches any run of characters inside one part of the URL (never `/`, `@`, `?`, `#`). */
  readonly urls: readonly string[];
  /** Whole command lines that may be started (the command and its arguments, space-separated, exactly). */
  readonly commands: readonly string[];
  /** How many servers may be added at once (all principals together). */
  readonly maxAdded: number;
}

export interface ServerEntry {
  readonly name: string;
  readonly source: 'config' | 'added';
  readonly backend: BackendPort;
  /** Who added it (only they may remove it). */
  readonly addedBy?: string | undefined;
}

export interface AddServer {
  readonly name: string;
  readonly url?: string | undefined;
  readonly transport?: 'streamable-http' | 'sse' | undefined;
  readonly command?: string | undefined;
  readonly args?: readonly string[] | undefined;
}

/** A URL pattern as a regular expression over normalised URLs: `*` stays inside one part. */
function patternToRegExp(pattern: string): RegExp {
  const escaped = pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return new RegExp(`^${escaped.join('[^/?#@\\\\]*')}$`);
}

/** The URL as it will be reached, or undefined when it must not be (unparsable, credentials, not http). */
function normalisedUrl(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.username !== '' || url.password !== '' || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined;
  return url.href;
}

/** Several instances: the servers added on one are added on every one (fronts/proxy/servers-shared.ts). */
export interface ServerSharing {
  /** Takes `req.name` cluster-wide for `by`; false when another instance has a server of that name. */
  claim(req: AddServer, by: string): Promise<boolean>;
  /** Tells the other instances the server was added here (they add it too). */
  added(name: string): Promise<void>;
  /** Gives the name up cluster-wide, and tells the other instances (they remove it too). */
  removed(name: string): Promise<void>;
}

export class ProxyServers {
  readonly #servers = new Map<string, ServerEntry>();
  readonly #create: (config: ServerConfig) => BackendPort;
  readonly #urls: readonly RegExp[];
  readonly #commands: ReadonlySet<string>;
  readonly #maxAdded: number;
  #sharing: ServerSharing | undefined;

  constructor(configured: readonly BackendPort[], create: (config: ServerConfig) => BackendPort, allow: AddServerAllowList) {
    for (const backend of configured) this.#servers.set(backend.name, { name: backend.name, source: 'config', backend });
    this.#create = create;
    this.#urls = allow.urls.map(patternToRegExp);
    this.#commands = new Set(allow.commands);
    this.#maxAdded = allow.maxAdded;
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

  /** Shares added servers with the other instances of a cluster from now on. */
  share(sharing: ServerSharing): void {
    this.#sharing = sharing;
  }

  /** Adds a server for `principal` (refused outside the allow-list, or when the name is taken); resolves once it made its first connection attempt. */
  async add(req: AddServer, principal: string): Promise<ServerEntry> {
    const parsed = this.#check(req);
    if (this.#sharing && !(await this.#sharing.claim(req, principal))) {
      throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, `A server named ${req.name} exists already`);
    }
    let added: ServerEntry;
    try {
      added = await this.#start(parsed, principal);
    } catch (e) {
      this.#servers.delete(req.name);
      await this.#sharing?.removed(req.name);
      throw e;
    }
    await this.#sharing?.added(req.name);
    return added;
  }

  /** Adds a server another instance added (checked against this instance's allow-list too). */
  async adopt(req: AddServer, principal: string): Promise<ServerEntry> {
    return this.#start(this.#check(req), principal);
  }

  /** Removes a server another instance removed (a configured one stays). */
  async drop(name: string): Promise<void> {
    const entry = this.#servers.get(name);
    if (entry?.source !== 'added') return;
    this.#servers.delete(name);
    await entry.backend.close();
  }

  async #start(config: ServerConfig, principal: string): Promise<ServerEntry> {
    const backend = this.#create(config);
    const added: ServerEntry = { name: config.name, source: 'added', backend, addedBy: principal };
    this.#servers.set(config.name, added);
    await backend.start();
    return added;
  }

  /** The server `req` asks for, when this instance allows it. */
  #check(req: AddServer): ServerConfig {
    if (!this.canAdd)
      throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, 'add_server is off: the operator allowed no URLs or commands (gateway.proxyTools.addServer)');
    if (this.#servers.has(req.name)) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, `A server named ${req.name} exists already`);
    if ((req.url === undefined) === (req.command === undefined)) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, 'Give exactly one of url or command');
    if (this.list().filter((e) => e.source === 'added').length >= this.#maxAdded) {
      throw new ToolError(TOOL_ERRORS.LIMIT, `No more servers may be added (gateway.proxyTools.addServer.maxAdded is ${this.#maxAdded})`);
    }
    let entry: Record<string, unknown>;
    if (req.url !== undefined) {
      const url = normalisedUrl(req.url);
      if (url === undefined || !this.#urls.some((re) => re.test(url))) {
        throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, 'This URL is not on the allow-list (gateway.proxyTools.addServer.urls)', { url: req.url });
      }
      entry = { url, ...(req.transport ? { transport: req.transport } : {}) };
    } else {
      const line = [req.command!, ...(req.args ?? [])].join(' ');
      if (!this.#commands.has(line)) {
        throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, 'This command line is not on the allow-list (gateway.proxyTools.addServer.commands)', { command: line });
      }
      entry = { command: req.command, args: [...(req.args ?? [])] };
    }
    const parsed = parseServerEntry(req.name, entry);
    if (!parsed.ok) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, parsed.error.join('; '));
    return parsed.value;
  }

  /** Removes a server `principal` added, and closes it (its calls fail). Configured servers stay. */
  async remove(name: string, principal: string): Promise<void> {
    const entry = this.#servers.get(name);
    if (!entry) throw new ToolError(TOOL_ERRORS.SERVER_NOT_FOUND, `No server named ${name}`);
    if (entry.source === 'config')
      throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, `${name} comes from the gateway's configuration; only servers added with add_server can be removed`);
    if (entry.addedBy !== principal) throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, `${name} was added by someone else; only they can remove it`);
    this.#servers.delete(name);
    await this.#sharing?.removed(name);
    await entry.backend.close();
  }

  /** Closes the added servers (the configured ones are the gateway's to close). */
  async close(): Promise<void> {
    const added = this.list().filter((e) => e.source === 'added');
    for (const e of added) this.#servers.delete(e.name);
    await Promise.all(added.map((e) => e.backend.close()));
  }
}
