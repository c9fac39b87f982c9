/**
 * A legacy backend's lists as each capability set sees them (servers show some tools only to clients
 * that declared elicitation, sampling or roots): the cache per view (list-cache.ts), and the sessions
 * that fetch them — the primary for its own capability set, one catalog session per other set, closed
 * when unused for `idleMs` (their lists stay cached; one reopens on demand).
 *
 * A list is fetched within `listTimeoutMs`, connecting its session included: a frozen backend makes
 * the list fail at its deadline, and callers answer from cache or without this backend. While the
 * backend is silent (primary-connection.ts) lists fail at once, so they come from cache.
 */
import { GatewayError, isJsonRpcError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { anySignal, raceSignal } from '../../util/abort.js';
import { background } from '../../util/background.js';
import { Tracked } from '../../util/tracked.js';
import { capabilityKey, type InputCapabilities } from '../input-capabilities.js';
import type { BackendSession } from './backend-session.js';
import { DEFAULT_VIEW, ListCache } from './list-cache.js';
import { type CatalogKind, LIST_METHODS, fetchAllPages } from './port.js';
import type { PrimaryConnection } from './primary-connection.js';

export interface ListViewsOptions {
  /** The backend's name, for errors. */
  readonly name: string;
  readonly primary: PrimaryConnection;
  /** The primary's capability set: callers that declared it see the primary's view. */
  readonly primaryCaps: InputCapabilities;
  /** Starts and connects a catalog session declaring `caps`. */
  readonly start: (caps: InputCapabilities, signal: AbortSignal) => Promise<BackendSession>;
  readonly cacheTtlMs: number;
  readonly listTimeoutMs: number;
  /** A view's own session unused this long is closed. */
  readonly idleMs: number;
  readonly logger: Logger;
}

type Items = Record<string, unknown>[];

/** The session of a view other than the primary's, and when a list last asked for it. */
interface ViewSession {
  readonly session: Promise<BackendSession>;
  usedAt: number;
}

/** A view is named by the canonical key of its capability set, and decoded from it here only. */
const viewOf = (caps: InputCapabilities): string => capabilityKey(caps);
const capsOfView = (view: string): InputCapabilities => JSON.parse(view) as InputCapabilities;

export class ListViews {
  readonly #opts: ListViewsOptions;
  readonly #cache: ListCache;
  readonly #primaryView: string;
  readonly #sessions = new Map<string, ViewSession>();
  readonly #closings = new Tracked();
  readonly #sweeper: ReturnType<typeof setInterval>;
  readonly #closer = new AbortController();
  #closing: Promise<void> | undefined;

  constructor(options: ListViewsOptions) {
    this.#opts = options;
    this.#primaryView = viewOf(options.primaryCaps);
    this.#cache = new ListCache(options.cacheTtlMs, (kind, view) => this.#fetch(kind, view));
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(1_000, Math.floor(options.idleMs / 2)));
    this.#sweeper.unref?.();
  }

  /** A list (all pages) as a session that declared `caps` sees it, cached for `cacheTtlMs` or until invalidated. */
  get(kind: CatalogKind, { fresh = false, caps = {} }: { fresh?: boolean; caps?: InputCapabilities } = {}): Promise<Items> {
    return this.#cache.get(kind, fresh, this.#viewKey(caps));
  }

  /** The last fetched list, without I/O (undefined if never fetched). */
  cached(kind: CatalogKind, caps: InputCapabilities = {}): Items | undefined {
    return this.#cache.cached(kind, this.#viewKey(caps));
  }

  /** Marks one list (or every list) stale in every view: the next `get` fetches it again. */
  invalidate(kind?: CatalogKind): void {
    this.#cache.invalidate(kind);
  }

  /** Closes every view's own session (not the primary); resolves when all are closed. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closer.abort(new GatewayError('gateway_closing'));
      clearInterval(this.#sweeper);
      for (const view of [...this.#sessions.keys()]) this.#drop(view);
      await this.#closings.settled();
    })();
    return this.#closing;
  }

  /** The list cache's view of `caps`: the primary's own capability set is the default view. */
  #viewKey(caps: InputCapabilities): string {
    const view = viewOf(caps);
    return view === this.#primaryView ? DEFAULT_VIEW : view;
  }

  /** Fetches a list within `listTimeoutMs`, its session's connect included. */
  async #fetch(kind: CatalogKind, view: string): Promise<Items> {
    if (this.#opts.primary.silent) throw new GatewayError('backend_unavailable', `${this.#opts.name} (not answering)`); // callers fall back to the cache
    const limitMs = this.#opts.listTimeoutMs;
    const deadline = Date.now() + limitMs;
    const signal = anySignal([this.#closer.signal, AbortSignal.timeout(limitMs)]);
    let session: BackendSession;
    try {
      // The connect has its own deadline and goes on for the next list; this list waits no longer than its own.
      session = await raceSignal(this.#session(view), signal);
    } catch (e) {
      if (!signal.aborted || this.#closer.signal.aborted) throw e;
      throw new GatewayError('backend_timeout', `${this.#opts.name} (no session for ${kind} within ${limitMs} ms)`, { cause: e });
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
      if (!isJsonRpcError(e)) background('close a failed list session', session.close(), this.#opts.logger);
      throw e;
    }
  }

  /** The session that fetches lists for `view`: the primary, or the view's own (started on first use). */
  #session(view: string): Promise<BackendSession> {
    if (view === DEFAULT_VIEW) return this.#opts.primary.session();
    const open = this.#sessions.get(view);
    if (open) {
      open.usedAt = Date.now();
      return open.session;
    }
    const session = this.#opts.start(capsOfView(view), this.#closer.signal).then(
      (s) => {
        s.onClose(() => {
          if (this.#sessions.get(view)?.session === session) this.#sessions.delete(view);
        });
        return s;
      },
      (e: unknown) => {
        if (this.#sessions.get(view)?.session === session) this.#sessions.delete(view);
        throw new GatewayError('backend_unavailable', this.#opts.name, { cause: e });
      },
    );
    this.#sessions.set(view, { session, usedAt: Date.now() });
    return session;
  }

  /** Closes the views' own sessions not used for `idleMs`. */
  #sweep(): void {
    const cutoff = Date.now() - this.#opts.idleMs;
    for (const [view, { usedAt }] of this.#sessions) if (usedAt < cutoff) this.#drop(view);
  }

  #drop(view: string): void {
    const open = this.#sessions.get(view);
    this.#sessions.delete(view);
    if (open) this.#closings.add(open.session.then((s) => s.close()));
  }
}
