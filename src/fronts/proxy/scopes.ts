/**
 * Every scope of the proxy tools' state, by key: `<principal>` (the default), `<principal> ws:<handle>`
 * (a workspace `new_workspace` minted) or `<principal> session:<id>` (a legacy client session). A key
 * always starts with its principal, so no handle or session id of another principal can reach a scope
 * that is not its own. Scopes with nothing running are forgotten after `idleMs` unused (a legacy
 * session's when the session closes); events that concern everyone (`server_added`, backend list
 * changes) are added to every scope. A scope made later starts with one `server_added` per server
 * added at run time and still there: as seed 000's new session connects to every configured server,
 * a new scope learns of every added one (its events are its own; there is no shared event log).
 */
import { randomBytes } from 'node:crypto';
import type { LoggingLevel } from '@modelcontextprotocol/server';
import type { Logger } from '../../log.js';
import type { LogTap } from '../dialect.js';
import { Scope, type ScopeLimits } from './scope.js';
import type { ProxyEventType } from './scope-events.js';

export interface ScopesOptions extends ScopeLimits {
  readonly idleMs: number;
  readonly maxWorkspacesPerPrincipal: number;
  readonly logger: Logger;
}

const SEP = '\u0000';

export class Scopes {
  readonly #scopes = new Map<string, Scope>();
  /** principal → workspace handles it minted. */
  readonly #workspaces = new Map<string, Set<string>>();
  /** The servers added at run time and still there: name → its `server_added` data (for scopes made later). */
  readonly #added = new Map<string, Record<string, unknown>>();
  readonly #opts: ScopesOptions;
  readonly #sweeper: ReturnType<typeof setInterval>;

  constructor(opts: ScopesOptions) {
    this.#opts = opts;
    this.#sweeper = setInterval(() => this.sweep(), Math.max(1_000, Math.min(60_000, Math.floor(opts.idleMs / 2))));
    this.#sweeper.unref?.();
  }

  get size(): number {
    return this.#scopes.size;
  }

  /** The scope of `principal` (with `sub`: a workspace or session inside it), made on first use. */
  get(principal: string, sub?: string): Scope {
    const key = sub === undefined ? principal : `${principal}${SEP}${sub}`;
    let scope = this.#scopes.get(key);
    if (!scope) {
      scope = new Scope(key, principal, sub, this.#opts, (count) =>
        this.#opts.logger.warn({ event: 'event_store_eviction', evictedCount: count, reason: 'scope event store full' }, 'event_store_eviction'),
      );
      this.#scopes.set(key, scope);
      for (const [name, data] of this.#added) scope.events.add('server_added', name, { ...data, addedBeforeScope: true });
    }
    scope.lastUsed = Date.now();
    return scope;
  }

  /** Mints a workspace handle for `principal`; undefined when it holds too many. */
  mintWorkspace(principal: string): string | undefined {
    let mine = this.#workspaces.get(principal);
    if (!mine) this.#workspaces.set(principal, (mine = new Set()));
    if (mine.size >= this.#opts.maxWorkspacesPerPrincipal) return undefined;
    const handle = `ws_${randomBytes(16).toString('base64url')}`;
    mine.add(handle);
    this.get(principal, `ws:${handle}`);
    return handle;
  }

  /** The scope of a workspace `principal` minted, or undefined (unknown, forgotten, or another principal's). */
  workspace(principal: string, handle: string): Scope | undefined {
    if (!this.#workspaces.get(principal)?.has(handle)) return undefined;
    return this.get(principal, `ws:${handle}`);
  }

  /** The log tap of a scope (every backend log line of its calls). */
  logTap(principal: string, sub?: string): LogTap {
    const { logs } = this.get(principal, sub);
    return (backend: string, level: LoggingLevel, params: Record<string, unknown>) => logs.push(backend, level, params);
  }

  /** Adds an event to every scope. */
  broadcast(type: ProxyEventType, server: string, data: unknown): void {
    for (const scope of this.#scopes.values()) scope.events.add(type, server, data);
  }

  /** A server was added at run time: every scope is told, now and when it is made. */
  announceAdded(name: string, data: Record<string, unknown>): void {
    this.#added.set(name, data);
    this.broadcast('server_added', name, data);
  }

  /** A server added at run time was removed: every scope is told. */
  announceRemoved(name: string, data: Record<string, unknown>): void {
    this.#added.delete(name);
    this.broadcast('server_removed', name, data);
  }

  /** A backend notification for every scope. */
  notifyAll(server: string, method: string, params?: Record<string, unknown>): void {
    for (const scope of this.#scopes.values()) scope.notify(server, method, params);
  }

  /** Forgets a scope (a legacy session closed): its calls are cancelled. */
  drop(principal: string, sub: string): void {
    const key = `${principal}${SEP}${sub}`;
    const scope = this.#scopes.get(key);
    if (!scope) return;
    this.#scopes.delete(key);
    for (const w of scope.work.values()) if (w.taskId === undefined) w.call.cancel();
  }

  /** Forgets scopes idle past `idleMs` with nothing running. */
  sweep(now = Date.now()): void {
    for (const [key, scope] of this.#scopes) {
      if (!scope.idle || now - scope.lastUsed < this.#opts.idleMs) continue;
      this.#scopes.delete(key);
      const ws = key.split(SEP)[1];
      if (!ws?.startsWith('ws:')) continue;
      const mine = this.#workspaces.get(scope.principal);
      mine?.delete(ws.slice(3));
      if (mine?.size === 0) this.#workspaces.delete(scope.principal);
    }
  }

  close(): void {
    clearInterval(this.#sweeper);
    this.#scopes.clear();
    this.#workspaces.clear();
    this.#added.clear();
  }
}
