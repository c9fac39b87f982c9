/**
 * A configured legacy backend: its primary session (connected at start, used for lists and
 * completion, reconnected with backoff when lost), a pool of call sessions keyed by the callers'
 * input capabilities, and a cache of its tool/prompt/resource lists.
 *
 * Sessions whose transport correlates backend requests (streamable HTTP) are shared by concurrent
 * calls; the others (stdio, HTTP+SSE) serve one input-capable call at a time, so the pool grows up to
 * `maxSessions` and further calls wait (bounded by `sessionWaitMs` and the caller's signal).
 */
import type { GatewaySettings, ServerConfig } from '../../config.js';
import { GatewayError, isJsonRpcError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { linkedController } from '../../util/abort.js';
import { type InputCapabilities, capabilityKey } from '../capabilities.js';
import type { CallRun } from '../calls/call-run.js';
import { BackendSession, sharesSessions, type ListKind } from './backend-session.js';
import { ListCache } from './list-cache.js';
import { type CatalogBackend, type CatalogKind, LIST_METHODS, fetchAllPages } from './catalog-backend.js';

export type { CatalogKind } from './catalog-backend.js';

const CONNECT_TIMEOUT_MS = 20_000;
const LIST_TIMEOUT_MS = 30_000;

export interface BackendOptions {
  readonly server: ServerConfig;
  readonly settings: Readonly<GatewaySettings>;
  readonly clientInfo: { name: string; version: string };
  readonly logger: Logger;
  /** Called when the backend says one of its lists changed. */
  readonly onListChanged?: (kind: ListKind) => void;
}

/** A session held by one call until `release()`. */
export interface Lease {
  readonly session: BackendSession;
  release(): void;
}

interface Waiter {
  key: string;
  caps: InputCapabilities;
  run: CallRun;
  resolve(lease: Lease): void;
  reject(e: unknown): void;
}

export class Backend implements CatalogBackend {
  readonly era = 'legacy' as const;
  readonly name: string;
  readonly server: ServerConfig;
  readonly #opts: BackendOptions;
  readonly #log: Logger;
  readonly #maxSessions: number;
  readonly #sessions = new Set<BackendSession>();
  readonly #connecting = new Map<string, Promise<BackendSession>>();
  readonly #waiters: Waiter[] = [];
  readonly #lists: ListCache;
  readonly #closer = new AbortController();
  #reserved = 0;
  #primary: BackendSession | undefined;
  #primaryConnect: Promise<BackendSession> | undefined;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #failures = 0;
  #sweeper: ReturnType<typeof setInterval>;
  #closed = false;

  constructor(opts: BackendOptions) {
    this.#opts = opts;
    this.server = opts.server;
    this.name = opts.server.name;
    this.#log = opts.logger.child({ backend: this.name });
    this.#maxSessions = opts.server.maxSessions ?? opts.settings.maxSessionsPerBackend;
    this.#lists = new ListCache(opts.settings.cacheTtlMs, (kind) => this.#fetchList(kind));
    this.#sweeper = setInterval(() => this.#sweepIdle(), Math.max(1_000, Math.floor(opts.settings.idleSessionMs / 2)));
    this.#sweeper.unref?.();
  }

  /** True when the primary session is connected. */
  get up(): boolean {
    return this.#primary !== undefined && !this.#primary.closed;
  }

  /** Session counts, for diagnostics and tests. */
  get stats(): { sessions: number; busy: number; waiting: number } {
    let busy = 0;
    for (const s of this.#sessions) if (s.busy) busy++;
    return { sessions: this.#sessions.size, busy, waiting: this.#waiters.length };
  }

  /** Connects the primary session; on failure keeps retrying with backoff in the background. */
  async start(): Promise<void> {
    try {
      await this.primary();
    } catch (e) {
      this.#log.warn({ err: (e as Error).message }, 'backend unavailable at start; retrying in the background');
    }
  }

  /** The primary session, connecting it if needed. Throws `backend_unavailable` when it cannot. */
  async primary(): Promise<BackendSession> {
    if (this.#closed) throw new GatewayError('gateway_closing');
    if (this.#primary && !this.#primary.closed) return this.#primary;
    // While a reconnect is scheduled, fail fast: a flood of list requests must not become a flood of
    // connection attempts (for stdio: process spawns). The backoff timer does the reconnecting.
    if (this.#reconnectTimer && !this.#primaryConnect) throw new GatewayError('backend_unavailable', this.name);
    this.#primaryConnect ??= (async () => {
      const caps: InputCapabilities = this.#opts.settings.roots.length ? { roots: {} } : {};
      const session = this.#newSession(caps);
      try {
        await session.connect(this.#closer.signal, CONNECT_TIMEOUT_MS);
      } catch (e) {
        this.#scheduleReconnect();
        throw new GatewayError('backend_unavailable', this.name, { cause: e });
      } finally {
        this.#primaryConnect = undefined;
      }
      this.#failures = 0;
      this.#primary = session;
      this.#lists.invalidate();
      session.onClose(() => {
        if (this.#primary === session) this.#primary = undefined;
        if (!this.#closed) {
          this.#log.warn({}, 'backend connection lost; reconnecting');
          this.#scheduleReconnect();
        }
      });
      this.#log.info({ server: session.serverInfo?.name }, 'backend connected');
      return session;
    })();
    return this.#primaryConnect;
  }

  async capabilities(): Promise<Record<string, unknown> | undefined> {
    return this.primary().then(
      (s) => s.serverCapabilities as Record<string, unknown> | undefined,
      () => undefined,
    );
  }

  /** A backend list (all pages), cached for `cacheTtlMs` or until the backend says it changed. */
  list(kind: CatalogKind, { fresh = false }: { fresh?: boolean } = {}): Promise<Record<string, unknown>[]> {
    return this.#lists.get(kind, fresh);
  }

  /** The last fetched list, without I/O (undefined if never fetched). */
  cachedList(kind: CatalogKind): Record<string, unknown>[] | undefined {
    return this.#lists.cached(kind);
  }

  /** Sends a request that needs no input on the primary session (completion, ...). */
  async requestOnPrimary(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    const session = await this.primary();
    return session.request(method, params, { signal, timeoutMs: LIST_TIMEOUT_MS });
  }

  /**
   * A session for `run` whose declared capabilities equal `caps`. Shared sessions are reused by
   * concurrent calls; exclusive ones are handed to one call at a time (waiting when the pool is full).
   */
  async acquire(run: CallRun, caps: InputCapabilities, signal: AbortSignal): Promise<Lease> {
    if (this.#closed) throw new GatewayError('gateway_closing');
    const key = capabilityKey(caps);
    if (sharesSessions(this.server)) {
      const session = await this.#sharedSession(key, caps, signal);
      session.bindShared(run);
      return this.#lease(session, run);
    }
    const idle = this.#idleSession(key);
    if (idle) return this.#bind(idle, run);
    if (this.#sessions.size + this.#reserved < this.#maxSessions || this.#evictIdle()) {
      return this.#bind(await this.#createSession(caps, signal), run);
    }
    return this.#wait(key, caps, run, signal);
  }

  /** Closes every session and settles every waiter. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closer.abort(new GatewayError('gateway_closing'));
    clearInterval(this.#sweeper);
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    for (const w of this.#waiters.splice(0)) w.reject(new GatewayError('gateway_closing'));
    const all = [...this.#sessions, ...(this.#primary ? [this.#primary] : [])];
    await Promise.all(all.map((s) => s.close()));
  }

  async #fetchList(kind: CatalogKind): Promise<Record<string, unknown>[]> {
    const session = await this.primary();
    if (!session.serverCapabilities?.[LIST_METHODS[kind].capability]) return [];
    try {
      return await fetchAllPages(kind, (method, params) => session.request(method, params, { signal: this.#closer.signal, timeoutMs: LIST_TIMEOUT_MS }));
    } catch (e) {
      // A transport failure (refused, reset, unknown session): drop the session; it reconnects.
      if (!isJsonRpcError(e)) void session.close();
      throw e;
    }
  }

  #onListChanged(kind: ListKind): void {
    this.#lists.invalidate(kind);
    this.#opts.onListChanged?.(kind);
  }

  #newSession(caps: InputCapabilities): BackendSession {
    return new BackendSession({
      server: this.server,
      capabilities: caps,
      roots: this.#opts.settings.roots,
      clientInfo: this.#opts.clientInfo,
      logger: this.#log,
      onListChanged: (k) => this.#onListChanged(k),
    });
  }

  async #createSession(caps: InputCapabilities, signal: AbortSignal): Promise<BackendSession> {
    this.#reserved++;
    const session = this.#newSession(caps);
    const link = linkedController(signal, this.#closer.signal);
    try {
      await session.connect(link.controller.signal, CONNECT_TIMEOUT_MS);
    } catch (e) {
      if (signal.aborted) throw e;
      throw new GatewayError('backend_unavailable', this.name, { cause: e });
    } finally {
      link.dispose();
      this.#reserved--;
    }
    this.#sessions.add(session);
    session.onClose(() => {
      this.#sessions.delete(session);
      this.#serveWaiters();
    });
    return session;
  }

  async #sharedSession(key: string, caps: InputCapabilities, signal: AbortSignal): Promise<BackendSession> {
    for (const s of this.#sessions) if (!s.closed && capabilityKey(s.capabilities) === key) return s;
    let pending = this.#connecting.get(key);
    if (!pending) {
      pending = this.#createSession(caps, this.#closer.signal).finally(() => this.#connecting.delete(key));
      this.#connecting.set(key, pending);
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      pending.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  #idleSession(key: string): BackendSession | undefined {
    for (const s of this.#sessions) if (!s.closed && !s.busy && capabilityKey(s.capabilities) === key) return s;
    return undefined;
  }

  /** Closes one idle session of any capability set to make room. */
  #evictIdle(): boolean {
    for (const s of this.#sessions) {
      if (!s.busy && !s.closed) {
        this.#sessions.delete(s);
        void s.close();
        return true;
      }
    }
    return false;
  }

  #bind(session: BackendSession, run: CallRun): Lease {
    session.bindExclusive(run);
    return this.#lease(session, run);
  }

  #lease(session: BackendSession, run: CallRun): Lease {
    let released = false;
    return {
      session,
      release: () => {
        if (released) return;
        released = true;
        session.release(run);
        this.#serveWaiters();
      },
    };
  }

  #wait(key: string, caps: InputCapabilities, run: CallRun, signal: AbortSignal): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const timer = setTimeout(() => settle(new GatewayError('pool_exhausted', this.name)), this.#opts.settings.sessionWaitMs);
      timer.unref?.();
      const onAbort = (): void => settle(signal.reason);
      const waiter: Waiter = {
        key,
        caps,
        run,
        resolve: (lease) => {
          cleanup();
          resolve(lease);
        },
        reject: (e) => {
          cleanup();
          reject(e);
        },
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
      };
      const settle = (e: unknown): void => waiter.reject(e);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Hands freed capacity to waiters in FIFO order. */
  #serveWaiters(): void {
    while (this.#waiters.length && !this.#closed) {
      const w = this.#waiters[0]!;
      const idle = this.#idleSession(w.key);
      if (idle) {
        this.#waiters.shift();
        w.resolve(this.#bind(idle, w.run));
        continue;
      }
      if (this.#sessions.size + this.#reserved < this.#maxSessions || this.#evictIdle()) {
        this.#waiters.shift();
        this.#createSession(w.caps, w.run.signal).then(
          (s) => w.resolve(this.#bind(s, w.run)),
          (e: unknown) => w.reject(e),
        );
        continue;
      }
      return;
    }
  }

  #sweepIdle(): void {
    const cutoff = Date.now() - this.#opts.settings.idleSessionMs;
    for (const s of this.#sessions) {
      if (!s.busy && s.lastUsed < cutoff) {
        this.#sessions.delete(s);
        void s.close();
      }
    }
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#reconnectTimer) return;
    const delay = Math.min(30_000, 250 * 2 ** Math.min(this.#failures++, 7));
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.primary().catch(() => undefined);
    }, delay);
    this.#reconnectTimer.unref?.();
  }
}
