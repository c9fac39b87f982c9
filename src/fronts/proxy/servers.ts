/**
 * The servers the proxy tools reach: the configured backends, and the ones `add_server` added (shared
 * by every scope, as seed 000's "Shared server configuration"; connections stay per principal as the
 * core's isolation rules say). Adding is off unless the operator gave an allow-list: a URL must match
 * one of its patterns, a command must be one of its commands exactly; nothing outside it is started or
 * reached.
 */
import { parseServerEntry, type ServerConfig } from '../../config.js';
import { shownUrl } from '../../util/uri-for-log.js';
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
  /** How it is reached (holds secrets: env and header values; show it only through server-info.ts). */
  readonly config: ServerConfig;
  /** Who added it (only they may remove it). */
  readonly addedBy?: string | undefined;
  /** Several instances: which addition it is (a name removed and added again is another one). */
  readonly additionId?: string | undefined;
}

export interface AddServer {
  readonly name: string;
  readonly url?: string | undefined;
  readonly transport?: 'streamable-http' | 'sse' | undefined;
  readonly command?: string | undefined;
  readonly args?: readonly string[] | undefined;
}

function taken(name: string): ToolError {
  return new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, `A server named ${name} exists already`);
}

function full(maxAdded: number): ToolError {
  return new ToolError(TOOL_ERRORS.LIMIT, `No more servers may be added (gateway.proxyTools.addServer.maxAdded is ${maxAdded})`);
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

/** Why `raw` cannot be added at all, whatever the allow-list says. */
function urlRefusal(raw: string): string {
  if (!URL.canParse(raw)) return 'This is not a URL';
  const url = new URL(raw);
  if (url.username !== '' || url.password !== '')
    return "URLs with credentials are refused: a server that needs a token takes it in its entry's headers (configured by the operator)";
  return 'Only http:// and https:// servers can be added';
}

/** Several instances: the servers added on one are added on every one (fronts/proxy/servers-replicated.ts). */
export interface ServerReplication {
  /**
   * Takes `req.name` cluster-wide for `by`, within `maxAdded` servers added in all: the id of
   * this addition, or why not (another instance has a server of that name; the cluster has its fill).
   */
  take(req: AddServer, by: string, maxAdded: number): Promise<{ readonly id: string } | { readonly refused: 'taken' | 'full' }>;
  /** Tells the other instances the server was added here (they add it too). */
  added(name: string, id: string): Promise<void>;
  /** Gives the name up cluster-wide, and tells the other instances (they remove it too). */
  removed(name: string, id: string): Promise<void>;
}

export class ProxyServers {
  readonly #servers = new Map<string, ServerEntry>();
  readonly #create: (config: ServerConfig) => BackendPort;
  readonly #urls: readonly RegExp[];
  readonly #commands: ReadonlySet<string>;
  readonly #maxAdded: number;
  #replication: ServerReplication | undefined;
  /** Names being added right now (their first connection attempt is under way). */
  readonly #adding = new Set<string>();

  constructor(
    configured: readonly { readonly config: ServerConfig; readonly backend: BackendPort }[],
    create: (config: ServerConfig) => BackendPort,
    allow: AddServerAllowList,
  ) {
    for (const { config, backend } of configured) this.#servers.set(backend.name, { name: backend.name, source: 'config', backend, config });
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
  replicate(replication: ServerReplication): void {
    this.#replication = replication;
  }

  /** Adds a server for `principal` (refused outside the allow-list, or when the name is taken); resolves once it made its first connection attempt. */
  async add(req: AddServer, principal: string): Promise<ServerEntry> {
    const config = this.#check(req);
    this.#adding.add(req.name); // taken from now on: a concurrent add of the name, or past the bound, is refused
    try {
      let additionId: string | undefined;
      if (this.#replication) {
        const addition = await this.#replication.take(req, principal, this.#maxAdded);
        if ('refused' in addition) throw addition.refused === 'taken' ? taken(req.name) : full(this.#maxAdded);
        additionId = addition.id;
      }
      let added: ServerEntry;
      try {
        added = await this.#start(config, principal, additionId);
      } catch (e) {
        this.#servers.delete(req.name);
        if (additionId !== undefined) await this.#replication?.removed(req.name, additionId);
        throw e;
      }
      if (additionId !== undefined) await this.#replication?.added(req.name, additionId);
      return added;
    } finally {
      this.#adding.delete(req.name);
    }
  }

  /** Adds a server another instance added (checked against this instance's allow-list too); one of the same name but another addition goes first. */
  async adopt(req: AddServer, principal: string, additionId: string): Promise<ServerEntry | undefined> {
    const have = this.#servers.get(req.name);
    if (have?.additionId === additionId) return undefined;
    if (have?.source === 'added') await this.drop(req.name, have.additionId);
    return this.#start(this.#check(req, true), principal, additionId);
  }

  /** Removes a server another instance removed, when it is that addition (a configured one stays). */
  async drop(name: string, additionId: string | undefined): Promise<boolean> {
    const entry = this.#servers.get(name);
    if (entry?.source !== 'added' || entry.additionId !== additionId) return false;
    this.#servers.delete(name);
    await entry.backend.close();
    return true;
  }

  async #start(config: ServerConfig, principal: string, additionId: string | undefined): Promise<ServerEntry> {
    const backend = this.#create(config);
    const added: ServerEntry = { name: config.name, source: 'added', backend, config, addedBy: principal, ...(additionId !== undefined ? { additionId } : {}) };
    this.#servers.set(config.name, added);
    await backend.start();
    return added;
  }

  /** The server `req` asks for, when this instance allows it (`adopted`: the cluster already took its name and counted it). */
  #check(req: AddServer, adopted = false): ServerConfig {
    if (!this.canAdd)
      throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, 'add_server is off: the operator allowed no URLs or commands (gateway.proxyTools.addServer)');
    if (this.#servers.has(req.name) || this.#adding.has(req.name)) throw taken(req.name);
    if ((req.url === undefined) === (req.command === undefined)) throw new ToolError(TOOL_ERRORS.INVALID_ARGUMENTS, 'Give exactly one of url or command');
    if (!adopted && this.list().filter((e) => e.source === 'added').length + this.#adding.size >= this.#maxAdded) throw full(this.#maxAdded);
    let entry: Record<string, unknown>;
    if (req.url !== undefined) {
      const url = normalisedUrl(req.url);
      if (url === undefined || !this.#urls.some((re) => re.test(url))) {
        const why = url === undefined ? urlRefusal(req.url) : 'This URL is not on the allow-list (gateway.proxyTools.addServer.urls)';
        throw new ToolError(TOOL_ERRORS.NOT_ALLOWED, why, { url: shownUrl(req.url) });
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
    if (entry.additionId !== undefined) await this.#replication?.removed(name, entry.additionId);
    await entry.backend.close();
  }

  /** Closes the added servers (the configured ones are the gateway's to close). */
  async close(): Promise<void> {
    const added = this.list().filter((e) => e.source === 'added');
    for (const e of added) this.#servers.delete(e.name);
    await Promise.all(added.map((e) => e.backend.close()));
  }
}
