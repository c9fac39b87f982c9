/**
 * A configured legacy (2025-11-25 and older) backend behind the port: its primary session (connected
 * at start, used for lists and completion, reconnected with backoff when lost), a pool of call
 * sessions keyed by the callers' input capabilities, and a cache of its tool/prompt/resource lists.
 *
 * A call leases a session whose `initialize` declared exactly the caller's input capabilities, so the
 * backend never asks for what the caller cannot give; its mid-call requests reach the call through
 * the `CallChannel`. A session whose call ended without the backend's own answer (cancelled, timed
 * out, transport failure) is discarded rather than reused, so a late backend request can never reach
 * another call.
 */
import type { GatewaySettings, ServerConfig } from '../../config.js';
import { GatewayError, isJsonRpcError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { capabilityKey, type InputCapabilities } from '../capabilities.js';
import { BackendSession, REQUEST_TIMEOUT_CODE, isLocalTimeout, sharesSessions, type ListKind } from './backend-session.js';
import { callAsBackendTask, runsAsBackendTask } from './backend-task.js';
import { Traffic } from './liveness.js';
import { StartFailure, causeText } from './start-failure.js';
import { linkedController, raceSignal } from '../../util/abort.js';
import { background } from '../../util/background.js';
import { DEFAULT_VIEW, ListCache } from './list-cache.js';
import {
  type BackendCall,
  type BackendHealth,
  type BackendOutcome,
  type BackendPort,
  type CatalogKind,
  CONNECT_TIMEOUT_MS,
  LIST_METHODS,
  fetchAllPages,
} from './port.js';
import { SessionPool, type Lease } from './session-pool.js';
import { Tracked } from '../../util/tracked.js';

export interface LegacyBackendOptions {
  readonly server: ServerConfig;
  readonly settings: Readonly<GatewaySettings>;
  readonly clientInfo: { name: string; version: string };
  readonly logger: Logger;
  /** Called when the backend says one of its lists changed. */
  readonly onListChanged?: (kind: ListKind) => void;
  /** A resource this backend was asked to watch (`resources/subscribe`) changed. */
  readonly onResourceUpdated?: (uri: string) => void;
  /** Called when the primary session connects, and when it is lost (a reconnect with backoff follows). */
  readonly onConnection?: (change: 'connected' | 'lost') => void;
  /** Sessions one principal may hold at once (fair share); undefined: no limit. */
  readonly maxSessionsPerPrincipal?: number | undefined;
}

/** Timers and the wall clock may disagree by a little: a -32001 this close to our deadline is ours. */
const TIMER_SLACK_MS = 50;

/** The pool key of a call: its capability set, and its principal unless sessions are shared. */
const PRINCIPAL_SEP = '\u0000';
/** Marks the key of sessions that multiplex calls which need no correlation. */
const MULTIPLEX_SUFFIX = '\u0001multiplex';
const EMPTY_CAPS_KEY = capabilityKey({});

export class LegacyBackend implements BackendPort {
  readonly name: string;
  /** A tool that only runs as a 2025-11-25 task is run as one and waited for (backend-task.ts). */
  readonly servesTaskToolsAsCalls = true;
  readonly server: ServerConfig;
  readonly parkTimeoutMs: number | undefined;
  readonly #opts: LegacyBackendOptions;
  readonly #log: Logger;
  readonly #pool: SessionPool;
  readonly #lists: ListCache;
  readonly #closer = new AbortController();
  readonly #capsByKey = new Map<string, InputCapabilities>();
  /** Sessions that serve lists for callers whose capability set differs from the primary's. */
  readonly #viewSessions = new Map<string, Promise<BackendSession>>();
  readonly #viewUsed = new Map<string, number>();
  readonly #viewClosings = new Tracked();
  readonly #viewSweeper: ReturnType<typeof setInterval>;
  #primary: BackendSession | undefined;
  #primaryConnect: Promise<BackendSession> | undefined;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #failures = 0;
  #lastFailure: { message: string; stderr: readonly string[] } | undefined;
  #closing: Promise<void> | undefined;
  readonly #healthTimer: ReturnType<typeof setInterval> | undefined;
  /** True after the primary failed a health ping, until it reconnects. */
  #hung = false;
  #lastCapabilities: Record<string, unknown> | undefined;
  /** When the primary session connected (ISO 8601). */
  #connectedAt: string | undefined;
  /** Messages from an HTTP server, on any of its sessions (one server); undefined for stdio (one process per session). */
  readonly #traffic: Traffic | undefined;
  readonly #hungAfterMs: number;
  #judging = false;

  constructor(opts: LegacyBackendOptions) {
    this.#opts = opts;
    this.server = opts.server;
    this.name = opts.server.name;
    this.parkTimeoutMs = opts.server.parkTimeoutMs;
    this.#log = opts.logger.child({ backend: this.name });
    this.#traffic = opts.server.kind === 'http' ? new Traffic() : undefined;
    this.#hungAfterMs = opts.server.hungAfterMs ?? opts.settings.hungAfterMs;
    this.#lists = new ListCache(opts.settings.cacheTtlMs, (kind, view) => this.#fetchList(kind, view));
    this.#pool = new SessionPool({
      name: this.name,
      shared: sharesSessions(opts.server),
      maxSessions: opts.server.maxSessions ?? opts.settings.maxSessionsPerBackend,
      waitMs: opts.settings.sessionWaitMs,
      idleMs: opts.settings.idleSessionMs,
      create: (key, signal) => this.#connectSession(this.#capsByKey.get(key) ?? {}, signal, true),
      groupOf: (key) => key.slice(key.indexOf(PRINCIPAL_SEP) + 1).replace(MULTIPLEX_SUFFIX, ''),
      spares: opts.server.spareSessions ?? 1,
      ...(opts.server.isolation === 'principal' && opts.maxSessionsPerPrincipal !== undefined ? { maxPerGroup: opts.maxSessionsPerPrincipal } : {}),
    });
    this.#viewSweeper = setInterval(() => this.#sweepViews(), Math.max(1_000, Math.floor(opts.settings.idleSessionMs / 2)));
    this.#viewSweeper.unref?.();
    if (opts.settings.healthCheckMs > 0) {
      this.#healthTimer = setInterval(() => background('backend health check', this.#checkHealth(), this.#log), opts.settings.healthCheckMs);
      this.#healthTimer.unref?.();
    }
  }

  /** Closes list sessions not used for `idleSessionMs` (their lists stay cached; one reopens on demand). */
  #sweepViews(): void {
    const cutoff = Date.now() - this.#opts.settings.idleSessionMs;
    for (const [view, used] of this.#viewUsed) {
      if (used >= cutoff) continue;
      const pending = this.#viewSessions.get(view);
      this.#viewSessions.delete(view);
      this.#viewUsed.delete(view);
      if (pending) this.#viewClosings.add(pending.then((s) => s.close()));
    }
  }

  /**
   * Judges the primary session's liveness (see liveness.ts). A backend silent on every exchange for
   * `hungAfterMs` is hung: its primary is closed (lists come from cache, reconnects back off), and
   * until it answers again its HTTP tools fail at once with `backend_unavailable` instead of waiting
   * for their timeouts. Only the primary is closed: calls parked on other sessions stay (over stdio
   * they are other processes; over HTTP a hung server may still come back and finish them).
   */
  async #checkHealth(): Promise<void> {
    const primary = this.#primary;
    if (!primary || primary.closed || this.#closing || this.#judging) return;
    this.#judging = true;
    let verdict;
    try {
      verdict = await primary.liveness();
    } finally {
      this.#judging = false;
    }
    if (verdict === 'alive' || this.#primary !== primary || primary.closed) return;
    if (verdict === 'gone') {
      await primary.close(); // its close handler logs the loss and reconnects
      return;
    }
    this.#hung = true;
    this.#lastFailure = {
      message: `silent on every exchange for ${this.#hungAfterMs} ms (did not answer a ping, sent nothing else)`,
      stderr: primary.stderrTail.slice(-5),
    };
    this.#log.warn({ err: this.#lastFailure.message, hungAfterMs: this.#hungAfterMs }, 'backend hung; closing its connection and reconnecting');
    this.#failures++;
    await primary.close();
  }

  /** True when the primary session is connected. */
  get up(): boolean {
    return this.#primary !== undefined && !this.#primary.closed;
  }

  /** Call-session counts, for diagnostics and tests. */
  get stats(): { sessions: number; busy: number; waiting: number; connecting: number } {
    return this.#pool.stats;
  }

  health(): BackendHealth {
    const state = this.up && !this.#hung ? 'up' : this.#failures === 0 ? 'connecting' : 'down';
    const out: { -readonly [K in keyof BackendHealth]: BackendHealth[K] } = { name: this.name, state, failures: this.#failures };
    if (state === 'up' && this.#connectedAt) out.connectedAt = this.#connectedAt;
    if (state !== 'up' && this.#lastFailure) {
      out.lastError = this.#lastFailure.message;
      if (this.#lastFailure.stderr.length) out.stderr = this.#lastFailure.stderr;
    }
    return out;
  }

  /** Connects the primary session; on failure keeps retrying with backoff in the background (each failure logged at warn). */
  async start(): Promise<void> {
    await this.primary().catch(() => undefined);
  }

  /** The primary session, connecting it if needed. Throws `backend_unavailable` when it cannot. */
  async primary(): Promise<BackendSession> {
    if (this.#closing) throw new GatewayError('gateway_closing');
    if (this.#primary && !this.#primary.closed) return this.#primary;
    // While a reconnect is scheduled, fail fast: a flood of list requests must not become a flood of
    // connection attempts (for stdio: process spawns). The backoff timer does the reconnecting.
    if (this.#reconnectTimer && !this.#primaryConnect) throw new GatewayError('backend_unavailable', this.name);
    this.#primaryConnect ??= (async () => {
      const caps = this.#primaryCaps();
      let session: BackendSession;
      try {
        session = await this.#connectSession(caps, this.#closer.signal);
      } catch (e) {
        if (this.#closing) throw new GatewayError('gateway_closing');
        this.#lastFailure = { message: causeText(e), stderr: e instanceof StartFailure ? e.stderr : [] };
        const retryInMs = this.#scheduleReconnect();
        this.#log.warn(
          {
            err: this.#lastFailure.message,
            attempt: this.#failures,
            retryInMs,
            ...(this.#lastFailure.stderr.length ? { stderr: this.#lastFailure.stderr } : {}),
          },
          'backend unavailable; retrying with backoff',
        );
        throw new GatewayError('backend_unavailable', this.name, { cause: e });
      } finally {
        this.#primaryConnect = undefined;
      }
      if (this.#closing) {
        await session.close();
        throw new GatewayError('gateway_closing');
      }
      this.#failures = 0;
      this.#lastFailure = undefined;
      this.#hung = false;
      this.#primary = session;
      this.#connectedAt = new Date().toISOString();
      this.#lists.invalidate();
      session.onClose(() => {
        if (this.#primary === session) this.#primary = undefined;
        if (!this.#closing) {
          this.#log.warn({ stderr: session.stderrTail.slice(-5) }, 'backend connection lost; reconnecting');
          this.#opts.onConnection?.('lost');
          this.#scheduleReconnect();
        }
      });
      this.#log.info({ server: session.serverInfo?.name }, 'backend connected');
      this.#opts.onConnection?.('connected');
      // Its tools become known now, so they stay known (from cache) should it go away before anyone lists them.
      background(
        'prefetch the tool list',
        this.#lists.get('tools').catch(() => undefined),
        this.#log,
      );
      return session;
    })();
    return this.#primaryConnect;
  }

  /** The server's capabilities; while it is down or hung, the last ones it declared (its lists are served from cache). */
  async capabilities(): Promise<Record<string, unknown> | undefined> {
    if (this.#hung) return this.#lastCapabilities;
    return this.#primaryWithin().then(
      (s) => (this.#lastCapabilities = s.serverCapabilities as Record<string, unknown> | undefined),
      () => this.#lastCapabilities,
    );
  }

  /**
   * The primary session; a connection still being made (a frozen backend) is waited for no longer
   * than `listTimeoutMs` (then `backend_timeout`), nor past `signal`.
   */
  async #primaryWithin(signal?: AbortSignal): Promise<BackendSession> {
    const limit = AbortSignal.timeout(this.#opts.settings.listTimeoutMs);
    try {
      return await raceSignal(this.primary(), signal ? AbortSignal.any([signal, limit]) : limit);
    } catch (e) {
      if (limit.aborted && !signal?.aborted)
        throw new GatewayError('backend_timeout', `${this.name} (not connected within ${this.#opts.settings.listTimeoutMs} ms)`);
      throw e;
    }
  }

  /**
   * A backend list (all pages) as a session that declared `caps` sees it, cached for `cacheTtlMs` or
   * until the backend says it changed.
   */
  list(kind: CatalogKind, { fresh = false, caps = {} }: { fresh?: boolean; caps?: InputCapabilities } = {}): Promise<Record<string, unknown>[]> {
    const view = this.#viewOf(caps);
    return this.#lists.get(kind, fresh, view);
  }

  /** The last fetched list, without I/O (undefined if never fetched). */
  cachedList(kind: CatalogKind, caps: InputCapabilities = {}): Record<string, unknown>[] | undefined {
    return this.#lists.cached(kind, this.#viewOf(caps));
  }

  /** Sends a request that needs no input on the primary session (completion, ...). */
  async request(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (this.#hung) throw new GatewayError('backend_unavailable', `${this.name} (not answering)`);
    const session = await this.#primaryWithin(signal);
    return session.request(method, params, { signal, timeoutMs: this.#opts.settings.listTimeoutMs });
  }

  /**
   * Runs one call on a session leased for the caller's capability set — and, unless the server is
   * configured `"isolation": "shared"`, for the caller's principal alone.
   */
  async call(call: BackendCall): Promise<BackendOutcome> {
    // A hung streamable-HTTP server is one server for every session: fail fast until it answers again.
    if (this.#hung && this.server.kind === 'http') throw new GatewayError('backend_unavailable', `${this.name} (not answering)`);
    const capsKey = capabilityKey(call.caps);
    // A caller that can be asked nothing and wants no logs gets nothing from the backend that needs
    // routing to it (progress is routed by token): its calls share one session even over stdio.
    const multiplex = capsKey === EMPTY_CAPS_KEY && call.logLevel === undefined;
    const base = this.server.isolation === 'shared' ? capsKey : `${capsKey}${PRINCIPAL_SEP}${call.principal}`;
    const key = multiplex ? `${base}${MULTIPLEX_SUFFIX}` : base;
    if (!this.#capsByKey.has(key)) this.#capsByKey.set(key, call.caps);
    // `callTimeoutMs` bounds the whole call: the wait for a session and its start-up included.
    const deadline = Date.now() + call.timeoutMs;
    const tool = await this.#toolOf(call);
    const link = linkedController(call.signal);
    let expired: GatewayError | undefined;
    const timer = setTimeout(() => {
      expired = new GatewayError('backend_timeout', `${this.name} (no session within callTimeoutMs)`);
      link.controller.abort(expired);
    }, call.timeoutMs);
    timer.unref?.();
    let lease: Lease;
    try {
      lease = await this.#pool.acquire(key, call.channel, link.controller.signal, { multiplex });
    } catch (e) {
      if (expired && !call.signal.aborted) throw expired;
      if (e instanceof GatewayError || call.signal.aborted) throw e;
      throw new GatewayError('backend_unavailable', this.name, { cause: e });
    } finally {
      clearTimeout(timer);
      link.dispose();
    }
    const { session } = lease;
    let reusable = false;
    let broken = false;
    let stale = false;
    try {
      const timeoutMs = Math.max(1, deadline - Date.now());
      const result = runsAsBackendTask(tool, session.serverCapabilities as Record<string, unknown> | undefined)
        ? await callAsBackendTask(session, { params: call.params, signal: call.signal, deadline, channel: call.channel })
        : await session.request(call.method, call.params, { signal: call.signal, timeoutMs }, call.channel);
      reusable = true;
      return { kind: 'complete', result };
    } catch (e) {
      // The backend answered with an error response: its side of the call is over.
      reusable = !call.signal.aborted && isJsonRpcError(e) && (e as { code: number }).code !== REQUEST_TIMEOUT_CODE;
      // Ours is the SDK's deadline having passed; a -32001 before it is the backend's: a request of its
      // own (an elicitation, say) timed out on its side (v1 sends the same code and data).
      if (isLocalTimeout(e) && Date.now() >= deadline - TIMER_SLACK_MS) throw new GatewayError('backend_timeout', this.name, { cause: e });
      if ((e as { code?: unknown }).code === REQUEST_TIMEOUT_CODE && !call.signal.aborted) {
        throw new GatewayError('backend_request_expired', this.name, { cause: e });
      }
      if (session.closed || (e as Error).message === 'Not connected') throw new GatewayError('backend_closed', this.name, { cause: e });
      if (!call.signal.aborted && !(e instanceof GatewayError) && !isJsonRpcError(e)) {
        // A transport failure (connection refused, reset): the session is unusable.
        broken = true;
        // HTTP 404 on a session: the backend restarted and no longer knows it.
        stale = (e as { code?: unknown }).code === 404;
        throw new GatewayError('backend_unavailable', this.name, { cause: e });
      }
      throw e;
    } finally {
      // Discard before release, so no waiter is handed a session that must not be reused. A transport
      // failure of one call on a shared session ends that call only: the session is kept unless the
      // backend is gone or silent on every exchange (a busy one keeps its parked calls).
      if ((!reusable && !session.shared) || stale) this.#pool.discard(session);
      else if (broken) {
        background(
          'session liveness check',
          session.liveness().then((verdict) => verdict === 'alive' || this.#pool.discard(session)),
          this.#log,
        );
      }
      lease.release();
    }
  }

  /**
   * The tools/list entry of the tool a `tools/call` names, as the caller's sessions list it (undefined
   * when it cannot be listed; the call then goes as a plain one). Cached as a rule: the caller resolved the name.
   */
  async #toolOf(call: BackendCall): Promise<Record<string, unknown> | undefined> {
    if (call.method !== 'tools/call') return undefined;
    const name = call.params['name'];
    const tools = this.cachedList('tools', call.caps) ?? (await raceSignal(this.list('tools', { caps: call.caps }), call.signal).catch(() => undefined));
    return tools?.find((t) => t['name'] === name);
  }

  /** Closes every session and settles every waiter; resolves when every process is gone. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closer.abort(new GatewayError('gateway_closing'));
      clearInterval(this.#healthTimer);
      clearInterval(this.#viewSweeper);
      if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
      this.#reconnectTimer = undefined;
      await this.#primaryConnect?.catch(() => undefined);
      const views = [...this.#viewSessions.values()].map((p) => p.then((s) => s.close()).catch(() => undefined));
      await Promise.all([this.#pool.close(), this.#primary?.close(), ...views, this.#viewClosings.settled()]);
    })();
    return this.#closing;
  }

  /** The list view of `caps`: the primary's own capability set is the default view. */
  #viewOf(caps: InputCapabilities): string {
    const key = capabilityKey(caps);
    if (key === this.#primaryKey) return DEFAULT_VIEW;
    if (!this.#capsByKey.has(key)) this.#capsByKey.set(key, caps);
    return key;
  }

  get #primaryKey(): string {
    return capabilityKey(this.#primaryCaps());
  }

  #primaryCaps(): InputCapabilities {
    return (this.server.roots ?? this.#opts.settings.roots).length ? { roots: {} } : {};
  }

  /** The session that fetches lists for `view`: the primary, or one per other capability set (closed when idle). */
  async #viewSession(view: string): Promise<BackendSession> {
    if (view === DEFAULT_VIEW) return this.primary();
    this.#viewUsed.set(view, Date.now());
    let pending = this.#viewSessions.get(view);
    if (!pending) {
      pending = this.#connectSession(this.#capsByKey.get(view) ?? {}, this.#closer.signal).then(
        (session) => {
          session.onClose(() => {
            if (this.#viewSessions.get(view) === pending) this.#viewSessions.delete(view);
          });
          return session;
        },
        (e: unknown) => {
          this.#viewSessions.delete(view);
          throw new GatewayError('backend_unavailable', this.name, { cause: e });
        },
      );
      this.#viewSessions.set(view, pending);
    }
    return pending;
  }

  /**
   * Fetches a list within `listTimeoutMs`, connecting its session included: a frozen backend makes
   * the list fail at its deadline (callers answer from cache, or without this backend).
   */
  async #fetchList(kind: CatalogKind, view: string): Promise<Record<string, unknown>[]> {
    if (this.#hung) throw new GatewayError('backend_unavailable', `${this.name} (not answering)`); // callers fall back to the cache
    const limitMs = this.#opts.settings.listTimeoutMs;
    const deadline = Date.now() + limitMs;
    const signal = AbortSignal.any([this.#closer.signal, AbortSignal.timeout(limitMs)]);
    let session: BackendSession;
    try {
      // The connect has its own deadline and goes on for the next list; this list waits no longer than its own.
      session = await raceSignal(this.#viewSession(view), signal);
    } catch (e) {
      if (!signal.aborted || this.#closer.signal.aborted) throw e;
      throw new GatewayError('backend_timeout', `${this.name} (no session for ${kind} within ${limitMs} ms)`, { cause: e });
    }
    if (!session.serverCapabilities?.[LIST_METHODS[kind].capability]) return [];
    try {
      // The deadline is the request's own timeout (a -32001, which keeps the session), not the
      // signal: an aborted signal would look like a transport failure and close a slow but live backend.
      return await fetchAllPages(kind, (method, params) =>
        session.request(method, params, { signal: this.#closer.signal, timeoutMs: Math.max(1, deadline - Date.now()) }),
      );
    } catch (e) {
      // A transport failure (refused, reset, unknown session): drop the session; it reconnects.
      if (!isJsonRpcError(e)) background('close a failed list session', session.close(), this.#log);
      throw e;
    }
  }

  #onListChanged(kind: ListKind): void {
    this.#lists.invalidate(kind);
    this.#opts.onListChanged?.(kind);
  }

  /**
   * Connects a session. Call sessions (`forCalls`) of a principal-isolated server hold a session-level
   * `roots/list` for the principal's next call when no roots are configured; catalog sessions answer
   * the configured roots.
   */
  async #connectSession(caps: InputCapabilities, signal: AbortSignal, forCalls = false): Promise<BackendSession> {
    const session = new BackendSession({
      server: this.server,
      capabilities: caps,
      roots: this.server.roots ?? this.#opts.settings.roots,
      sessionRoots: forCalls && this.server.isolation === 'principal' ? 'defer' : 'config',
      settleMs: this.server.settleMs,
      traffic: this.#traffic,
      hungAfterMs: this.#hungAfterMs,
      clientInfo: this.#opts.clientInfo,
      logger: this.#log,
      onListChanged: (k) => this.#onListChanged(k),
      onResourceUpdated: (uri) => this.#opts.onResourceUpdated?.(uri),
    });
    try {
      await session.connect(signal, CONNECT_TIMEOUT_MS);
    } catch (e) {
      throw new StartFailure(e, session.stderrTail);
    }
    return session;
  }

  /** Schedules the next primary connection attempt; returns its delay. */
  #scheduleReconnect(): number {
    const delay = Math.min(30_000, 250 * 2 ** Math.min(this.#failures++, 7));
    if (this.#closing || this.#reconnectTimer) return delay;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.primary().catch(() => undefined);
    }, delay);
    this.#reconnectTimer.unref?.();
    return delay;
  }
}
