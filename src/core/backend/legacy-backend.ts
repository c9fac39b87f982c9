/**
 * A configured legacy (2025-11-25 and older) backend behind the port, as call routing over three
 * parts: its primary connection (primary-connection.ts: lists and completion, health, reconnects with
 * backoff), its list views (list-views.ts: the lists per capability set, cached), and a pool of call
 * sessions (session-pool.ts) keyed by the caller's input capabilities and principal (pool-key.ts).
 *
 * A call leases a session whose `initialize` declared exactly the caller's input capabilities, so the
 * backend never asks for what the caller cannot give; its mid-call requests reach the call through
 * the `CallChannel`. After a failure its session is kept, discarded or probed (call-failure.ts): an
 * exclusive session whose call ended without the backend's own answer (cancelled, timed out,
 * transport failure) is discarded, so a late backend request can never reach another call; a shared
 * session (streamable HTTP) is kept, unless the transport failed and the backend is stale, gone or
 * silent.
 */
import type { GatewaySettings, ServerConfig } from '../../config.js';
import { GatewayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { abortReason, raceSignal, withinDeadline } from '../../util/abort.js';
import { background } from '../../util/background.js';
import type { InputCapabilities } from '../input-capabilities.js';
import { itemNamed } from '../named-item.js';
import type { BackendCredentials } from './backend-credentials.js';
import { callAsBackendTask, runsAsBackendTask } from './backend-task.js';
import { sharesSessions, type ListKind } from './backend-session.js';
import { classifyFailure, type SessionFate } from './call-failure.js';
import { ListViews } from './list-views.js';
import { decodePoolKey, encodePoolKey, poolGroupOf, poolKeyOf } from './pool-key.js';
import type { BackendCall, BackendHealth, BackendOutcome, BackendPort, CatalogKind } from './port.js';
import { PrimaryConnection } from './primary-connection.js';
import { SessionPool, type Lease } from './session-pool.js';
import { createSessionStarter } from './session-starter.js';

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
  /** Told how long each call queued for a session waited (seconds). */
  readonly onPoolWait?: ((seconds: number) => void) | undefined;
  /** Told each call cancelled so that its session could serve a waiting call (`reclaimParkedAfterMs`). */
  readonly onReclaim?: (() => void) | undefined;
  /** Sessions the call pool starts at once (`gateway.maxSessionStarts`); undefined: no limit. */
  readonly maxSessionStarts?: number | undefined;
  /** Sessions one principal may hold at once (fair share); undefined: no limit. */
  readonly maxSessionsPerPrincipal?: number | undefined;
  /** An HTTP backend's bearer tokens (its `auth` entry); closed with the backend. */
  readonly credentials?: BackendCredentials | undefined;
}

export class LegacyBackend implements BackendPort {
  readonly name: string;
  /** A tool that only runs as a 2025-11-25 task is run as one and waited for (backend-task.ts). */
  readonly servesTaskToolsAsCalls = true;
  readonly server: ServerConfig;
  readonly parkTimeoutMs: number | undefined;
  readonly #log: Logger;
  readonly #listTimeoutMs: number;
  readonly #primary: PrimaryConnection;
  readonly #lists: ListViews;
  readonly #pool: SessionPool;
  readonly #credentials: BackendCredentials | undefined;
  #closing: Promise<void> | undefined;

  constructor(opts: LegacyBackendOptions) {
    const { server, settings } = opts;
    this.server = server;
    this.name = server.name;
    this.parkTimeoutMs = server.parkTimeoutMs;
    this.#credentials = opts.credentials;
    this.#log = opts.logger.child({ backend: this.name });
    this.#listTimeoutMs = settings.listTimeoutMs;
    const roots = server.roots ?? settings.roots;
    const hungAfterMs = server.hungAfterMs ?? settings.hungAfterMs;
    const start = createSessionStarter({
      server,
      roots,
      hungAfterMs,
      clientInfo: opts.clientInfo,
      logger: this.#log,
      onListChanged: (kind, setup) => {
        this.#lists.invalidate(kind);
        if (!setup) opts.onListChanged?.(kind);
      },
      onResourceUpdated: (uri) => opts.onResourceUpdated?.(uri),
      credentials: opts.credentials,
    });
    // The primary declares roots when there are roots to answer; lists for other capability sets come from their own sessions.
    const primaryCaps: InputCapabilities = roots.length ? { roots: {} } : {};
    this.#primary = new PrimaryConnection({
      name: this.name,
      start: (signal) => start(primaryCaps, signal, 'catalog'),
      logger: this.#log,
      listTimeoutMs: settings.listTimeoutMs,
      healthCheckMs: settings.healthCheckMs,
      hungAfterMs,
      onConnection: (change) => this.#onConnection(change, opts.onConnection),
    });
    this.#lists = new ListViews({
      name: this.name,
      primary: this.#primary,
      primaryCaps,
      start: (caps, signal) => start(caps, signal, 'catalog'),
      cacheTtlMs: settings.cacheTtlMs,
      listTimeoutMs: settings.listTimeoutMs,
      idleMs: settings.idleSessionMs,
      logger: this.#log,
    });
    this.#pool = new SessionPool({
      name: this.name,
      shared: sharesSessions(server),
      maxSessions: server.maxSessions ?? settings.maxSessionsPerBackend,
      ...(opts.maxSessionStarts !== undefined ? { maxStarts: opts.maxSessionStarts } : {}),
      waitMs: settings.sessionWaitMs,
      idleMs: settings.idleSessionMs,
      create: (key, signal) => start(decodePoolKey(key).caps, signal, 'calls'),
      groupOf: poolGroupOf,
      onWait: opts.onPoolWait,
      spares: server.spareSessions ?? 1,
      reclaimAfterMs: settings.reclaimParkedAfterMs,
      onReclaim: opts.onReclaim,
      ...(server.isolation === 'principal' && opts.maxSessionsPerPrincipal !== undefined ? { maxPerGroup: opts.maxSessionsPerPrincipal } : {}),
    });
  }

  /** True when the primary session is connected. */
  get up(): boolean {
    return this.#primary.up;
  }

  /** Call-session counts, for diagnostics and tests. */
  get stats(): { sessions: number; busy: number; waiting: number; connecting: number } {
    return this.#pool.stats;
  }

  health(): BackendHealth {
    return this.#primary.health();
  }

  /** Connects the primary session; on failure keeps retrying with backoff in the background (each failure logged at warn). */
  async start(): Promise<void> {
    await this.#primary.session().catch(() => undefined);
  }

  /** The server's capabilities; while it is down or silent, the last ones it declared (its lists are served from cache). */
  capabilities(): Promise<Record<string, unknown> | undefined> {
    return this.#primary.capabilities();
  }

  /**
   * A backend list (all pages) as a session that declared `caps` sees it, cached for `cacheTtlMs` or
   * until the backend says it changed.
   */
  list(kind: CatalogKind, opts: { fresh?: boolean; caps?: InputCapabilities } = {}): Promise<Record<string, unknown>[]> {
    return this.#lists.get(kind, opts);
  }

  /** The last fetched list, without I/O (undefined if never fetched). */
  cachedList(kind: CatalogKind, caps: InputCapabilities = {}): Record<string, unknown>[] | undefined {
    return this.#lists.cached(kind, caps);
  }

  /** Sends a request that needs no input on the primary session (completion, ...). */
  async request(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (this.#primary.silent) throw new GatewayError('backend_unavailable', `${this.name} (not answering)`);
    const session = await this.#primary.within(signal);
    return session.request(method, params, { signal, timeoutMs: this.#listTimeoutMs });
  }

  /**
   * Runs one call on a session leased for the caller's capability set — and, unless the server is
   * configured `"isolation": "shared"`, for the caller's principal alone.
   */
  async call(call: BackendCall): Promise<BackendOutcome> {
    // A hung streamable-HTTP server is one server for every session: fail fast until it answers again.
    if (this.#primary.silent && this.server.kind === 'http') throw new GatewayError('backend_unavailable', `${this.name} (not answering)`);
    // `callTimeoutMs` bounds the whole call: the wait for a session and its start-up included.
    const deadline = Date.now() + call.timeoutMs;
    // Most calls: the tools list is known and a session is ready, so nothing here waits. The tool's
    // entry (its execution mode); a list that cannot be had makes the call a plain one. A list to
    // fetch and a session to start go on side by side: a backend slow to start is waited for once.
    const known = call.method === 'tools/call' ? this.cachedList('tools', call.caps) : undefined;
    const listing = call.method !== 'tools/call' || known ? undefined : raceSignal(this.list('tools', { caps: call.caps }), call.signal).catch(() => undefined);
    const key = poolKeyOf(call, this.server.isolation);
    const end = call.cancel ?? call.signal;
    if (end.aborted) throw abortReason(end);
    const pooled = encodePoolKey(key);
    const lease = this.#pool.tryAcquire(pooled, call.channel, { multiplex: key.multiplex }) ?? (await this.#lease(call, pooled, key.multiplex));
    const tools = known ?? (listing && (await listing));
    if (listing && end.aborted) {
      lease.release();
      throw abortReason(end);
    }
    const tool = tools && itemNamed(tools, call.params['name']);
    const askedFirst = lease.session.askedFirst(call.channel);
    if (askedFirst) await this.#afterAsked(call, lease, askedFirst, deadline);
    return this.#run(call, lease, deadline, tool, key.multiplex);
  }

  /**
   * Waits until the session-level requests the call was handed (a `roots/list` of the backend's
   * initialization) are answered, within `callTimeoutMs` and the call's signal; the lease is given
   * back when the wait fails. An async frame, a timer and a linked signal while its client is asked:
   * only the first call of a session whose backend asked at start-up, so not worth `#run`'s care.
   */
  async #afterAsked(call: BackendCall, lease: Lease, asked: Promise<void>, deadline: number): Promise<void> {
    const expired = (): GatewayError => new GatewayError('backend_timeout', `${this.name} (its roots/list unanswered within callTimeoutMs)`);
    try {
      await withinDeadline(call.signal, deadline - Date.now(), expired, (signal) => raceSignal(asked, signal));
    } catch (e) {
      lease.release();
      throw e;
    }
  }

  /** A session for `call` once the pool has one (none was ready), within `callTimeoutMs` (then `backend_timeout`) and the call's signal. */
  async #lease(call: BackendCall, pooled: string, multiplex: boolean): Promise<Lease> {
    const expired = (): GatewayError => new GatewayError('backend_timeout', `${this.name} (no session within callTimeoutMs)`);
    try {
      return await withinDeadline(call.signal, call.timeoutMs, expired, (signal) => this.#pool.acquire(pooled, call.channel, signal, { multiplex }));
    } catch (e) {
      if (e instanceof GatewayError || call.signal.aborted) throw e;
      throw new GatewayError('backend_unavailable', this.name, { cause: e });
    }
  }

  /**
   * Sends `call` on its leased session, then releases the session (kept, discarded or probed:
   * call-failure.ts). Not an async function: a parked call would hold its suspended frame (issue 30).
   */
  #run(call: BackendCall, lease: Lease, deadline: number, tool: Record<string, unknown> | undefined, multiplexed: boolean): Promise<BackendOutcome> {
    const { session } = lease;
    // The call's end as it is cheapest to listen to (port.ts `cancel`); the AbortSignal where an API needs one.
    const end = call.cancel ?? call.signal;
    let sent: Promise<Record<string, unknown>>;
    try {
      sent = runsAsBackendTask(tool, session.serverCapabilities as Record<string, unknown> | undefined)
        ? callAsBackendTask(session, { params: call.params, signal: call.signal, deadline, channel: call.channel })
        : session.request(call.method, call.params, { signal: end, timeoutMs: Math.max(1, deadline - Date.now()) }, call.channel);
    } catch (e) {
      sent = Promise.reject(e);
    }
    return sent.then(
      (result): BackendOutcome => {
        this.#endLease(lease, 'keep');
        return { kind: 'complete', result };
      },
      (e: unknown) => {
        const failed = classifyFailure(e, {
          backend: this.name,
          aborted: end.aborted,
          sessionClosed: session.closed,
          // A session that calls share (streamable HTTP) outlives one call's end; so does one that calls which
          // can be asked nothing share (stdio, 2024 SSE) when a client went away: discarding it failed every
          // other call on it. A call of those that timed out still discards it (its process may be stuck).
          shared: session.shared || (multiplexed && end.aborted),
          deadline,
        });
        this.#endLease(lease, failed.session);
        throw failed.error;
      },
    );
  }

  /** Discards (or probes) the session before releasing it, so no waiter is handed one that must not be reused. */
  #endLease(lease: Lease, fate: SessionFate): void {
    const { session } = lease;
    if (fate === 'discard') this.#pool.discard(session);
    if (fate === 'probe') {
      background(
        'session liveness check',
        session.liveness().then((verdict) => verdict === 'alive' || this.#pool.discard(session)),
        this.#log,
      );
    }
    lease.release();
  }

  /** Closes every session and settles every waiter; resolves when every process is gone. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= Promise.all([this.#primary.close(), this.#lists.close(), this.#pool.close()]).then(() => this.#credentials?.close());
    return this.#closing;
  }

  /**
   * A new primary connection makes every list stale, and its tools are fetched at once, so they stay
   * known (from cache) should it go away before anyone lists them.
   */
  #onConnection(change: 'connected' | 'lost', announce: LegacyBackendOptions['onConnection']): void {
    if (change === 'lost') return announce?.(change);
    this.#lists.invalidate();
    announce?.(change);
    background(
      'prefetch the tool list',
      this.#lists.get('tools').catch(() => undefined),
      this.#log,
    );
  }
}
