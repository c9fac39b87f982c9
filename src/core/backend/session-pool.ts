/**
 * The call sessions of one legacy backend, pooled by key (the caller's normalised input capabilities).
 *
 * Shared pools (streamable HTTP, where the wire correlates backend requests) keep one session per key
 * for any number of concurrent calls. Exclusive pools (stdio, HTTP+SSE, `sessionMode: "exclusive"`)
 * hand a session to one call at a time: up to `maxSessions`, then callers queue (FIFO) until a session
 * frees up, bounded by `waitMs` and the caller's signal. A waiter is settled exactly once: a session
 * created for a waiter that has gone meanwhile goes back to the pool instead of staying bound.
 * Every session close is tracked, so `close()` resolves only when every session (and process) is gone.
 */
import { GatewayError } from '../../errors.js';
import { linkedController } from '../../util/abort.js';
import { background } from '../../util/background.js';
import type { BackendSession } from './backend-session.js';
import type { CallChannel } from './port.js';

export interface SessionPoolOptions {
  /** Backend name, for error messages. */
  readonly name: string;
  /** True when many calls may share one session. */
  readonly shared: boolean;
  readonly maxSessions: number;
  /** How long a caller may wait for a free session. */
  readonly waitMs: number;
  /** Idle sessions older than this are closed. */
  readonly idleMs: number;
  /** Creates and connects a session for `key`; rejects on failure or abort. */
  readonly create: (key: string, signal: AbortSignal) => Promise<BackendSession>;
  /** Whose share a key counts against (the principal); default: one group for all. */
  readonly groupOf?: (key: string) => string;
  /** Sessions one group may hold at once in an exclusive pool (default: `maxSessions`). */
  readonly maxPerGroup?: number;
  /**
   * Idle sessions kept ready per key in an exclusive pool (started in the background after a session
   * is taken, within `maxSessions`): the next call skips the start-up, and requests a backend sends on
   * its own right after `initialize` happen before any call is bound to the session.
   */
  readonly spares?: number;
}

/** A session held by one call until `release()`. */
export interface Lease {
  readonly session: BackendSession;
  release(): void;
}

interface Waiter {
  readonly key: string;
  readonly channel: CallChannel;
  readonly signal: AbortSignal;
  settled: boolean;
  /** Ends the wait deadline (the waiter has been given a slot). */
  stopTimer(): void;
  resolve(lease: Lease): void;
  reject(e: unknown): void;
}

interface Entry {
  readonly key: string;
  readonly session: BackendSession;
  /** Created for a caller that has not bound it yet: not idle for anyone else, not evictable. */
  claimed: boolean;
}

export class SessionPool {
  readonly #opts: SessionPoolOptions;
  readonly #entries = new Set<Entry>();
  readonly #connecting = new Map<string, Promise<BackendSession>>();
  readonly #waiters: Waiter[] = [];
  readonly #closings = new Set<Promise<void>>();
  readonly #starting = new Set<Promise<void>>();
  readonly #closer = new AbortController();
  readonly #held = new Map<string, number>();
  /** Keys with a spare session being started. */
  readonly #sparing = new Set<string>();
  readonly #sweeper: ReturnType<typeof setInterval>;
  #reserved = 0;
  #closed = false;

  constructor(options: SessionPoolOptions) {
    this.#opts = options;
    this.#sweeper = setInterval(() => this.#sweepIdle(), Math.max(1_000, Math.floor(options.idleMs / 2)));
    this.#sweeper.unref?.();
  }

  /** Session counts, for diagnostics and tests. */
  get stats(): { sessions: number; busy: number; waiting: number; connecting: number } {
    let busy = 0;
    for (const e of this.#entries) if (e.session.busy) busy++;
    return { sessions: this.#entries.size, busy, waiting: this.#waiters.length, connecting: this.#reserved };
  }

  /** A session for `channel` under `key`, waiting for one when the pool is full. */
  /**
   * `multiplex`: the call can share a session even in an exclusive pool, because the backend cannot
   * send it anything that needs correlating (the caller declared no input capability and wants no
   * logs). Such calls use sessions of their own key, never handed out exclusively.
   */
  async acquire(key: string, channel: CallChannel, signal: AbortSignal, multiplex = false): Promise<Lease> {
    if (this.#closed) throw new GatewayError('gateway_closing');
    if (this.#opts.shared || multiplex) {
      const session = await this.#sharedSession(key, signal);
      session.bindShared(channel);
      return this.#lease(session, channel);
    }
    const group = this.#groupOf(key);
    if (this.#atShare(group)) return this.#wait(key, channel, signal);
    const idle = this.#idle(key);
    if (idle) return this.#bind(idle, channel, key);
    if (!this.#hasRoom()) return this.#wait(key, channel, signal);
    this.#take(group);
    let session: BackendSession;
    try {
      session = await this.#create(key, signal);
    } catch (e) {
      this.#give(group);
      this.#serveWaiters();
      throw e;
    }
    return this.#bind(session, channel, key, true);
  }

  #groupOf(key: string): string {
    return this.#opts.groupOf?.(key) ?? '';
  }

  /** True when `group` holds its whole share of an exclusive pool: it waits, others go first. */
  #atShare(group: string): boolean {
    return (this.#held.get(group) ?? 0) >= (this.#opts.maxPerGroup ?? this.#opts.maxSessions);
  }

  #take(group: string): void {
    this.#held.set(group, (this.#held.get(group) ?? 0) + 1);
  }

  #give(group: string): void {
    const n = (this.#held.get(group) ?? 1) - 1;
    if (n <= 0) this.#held.delete(group);
    else this.#held.set(group, n);
  }

  /** Closes `session` (a session that must not be reused); tracked by `close()`. */
  discard(session: BackendSession): void {
    for (const e of this.#entries) if (e.session === session) this.#entries.delete(e);
    this.#track(session.close());
  }

  /** Rejects every waiter, closes every session; resolves when all are closed. Idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#closer.abort(new GatewayError('gateway_closing'));
      clearInterval(this.#sweeper);
      for (const w of this.#waiters.splice(0)) w.reject(new GatewayError('gateway_closing'));
      for (const e of [...this.#entries]) this.discard(e.session);
    }
    while (this.#closings.size || this.#starting.size) {
      await Promise.allSettled([...this.#closings, ...this.#starting]);
    }
  }

  #track(p: Promise<void>): void {
    const tracked = p.catch(() => undefined).finally(() => this.#closings.delete(tracked));
    this.#closings.add(tracked);
  }

  /**
   * Room for one more session. Sessions still closing do not count: a process may take a few seconds
   * to exit (stdin end, then SIGTERM, then SIGKILL), and a caller waiting for a slot must not wait for
   * that; so the number of processes can briefly exceed `maxSessions` by those on their way out.
   */
  #hasRoom(): boolean {
    return this.#entries.size + this.#reserved < this.#opts.maxSessions || this.#evictIdle();
  }

  /**
   * Starts a session for `key`. `claimed`: it is for a caller that binds it next (it is not idle for
   * anyone else meanwhile). Every start is tracked by `close()`; a failed start frees its slot for
   * the callers queued behind it.
   */
  #create(key: string, signal: AbortSignal, claimed = true): Promise<BackendSession> {
    const started = this.#start(key, signal, claimed);
    const tracked = started.then(
      () => undefined,
      () => this.#serveWaiters(),
    );
    this.#starting.add(tracked);
    background(
      'forget a finished session start',
      tracked.finally(() => this.#starting.delete(tracked)),
    );
    return started;
  }

  async #start(key: string, signal: AbortSignal, claimed: boolean): Promise<BackendSession> {
    this.#reserved++;
    const link = linkedController(signal, this.#closer.signal);
    let session: BackendSession;
    try {
      session = await this.#opts.create(key, link.controller.signal);
    } finally {
      link.dispose();
      this.#reserved--;
    }
    if (this.#closed) {
      this.#track(session.close());
      throw new GatewayError('gateway_closing');
    }
    const entry: Entry = { key, session, claimed };
    this.#entries.add(entry);
    session.onClose(() => {
      this.#entries.delete(entry);
      this.#serveWaiters();
    });
    return session;
  }

  /** Marks a claimed session as free for others (its caller went away, or it is bound now). */
  #unclaim(session: BackendSession): void {
    for (const e of this.#entries) if (e.session === session) e.claimed = false;
  }

  async #sharedSession(key: string, signal: AbortSignal): Promise<BackendSession> {
    for (const e of this.#entries) if (e.key === key && !e.session.closed) return e.session;
    let pending = this.#connecting.get(key);
    if (!pending) {
      pending = this.#create(key, this.#closer.signal, false).finally(() => this.#connecting.delete(key));
      this.#connecting.set(key, pending);
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      pending.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  #idle(key: string): BackendSession | undefined {
    for (const e of this.#entries) if (e.key === key && !e.claimed && !e.session.closed && !e.session.busy) return e.session;
    return undefined;
  }

  /** Closes one idle session of any key to make room. */
  #evictIdle(): boolean {
    for (const e of this.#entries) {
      if (!e.claimed && !e.session.busy && !e.session.closed) {
        this.discard(e.session);
        return true;
      }
    }
    return false;
  }

  /** Binds an exclusive session to `channel`; its group's share is taken here unless `taken` already. */
  #bind(session: BackendSession, channel: CallChannel, key: string, taken = false): Lease {
    const group = this.#groupOf(key);
    if (!taken) this.#take(group);
    this.#unclaim(session);
    session.bindExclusive(channel);
    this.#topUp(key);
    return this.#lease(session, channel, () => this.#give(group));
  }

  /** Starts a spare session for `key` when fewer than `spares` are idle or starting and there is room (no eviction). */
  #topUp(key: string): void {
    const spares = this.#opts.spares ?? 0;
    if (spares <= 0 || this.#closed || this.#sparing.has(key)) return;
    let idle = 0;
    for (const e of this.#entries) if (e.key === key && !e.session.closed && !e.session.busy) idle++;
    if (idle >= spares || this.#entries.size + this.#reserved >= this.#opts.maxSessions) return;
    this.#sparing.add(key);
    this.#create(key, this.#closer.signal, false).then(
      () => {
        this.#sparing.delete(key);
        this.#serveWaiters();
      },
      () => this.#sparing.delete(key),
    );
  }

  #lease(session: BackendSession, channel: CallChannel, onRelease?: () => void): Lease {
    let released = false;
    return {
      session,
      release: () => {
        if (released) return;
        released = true;
        session.release(channel);
        onRelease?.();
        this.#serveWaiters();
      },
    };
  }

  #wait(key: string, channel: CallChannel, signal: AbortSignal): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        key,
        channel,
        signal,
        settled: false,
        stopTimer: () => clearTimeout(timer),
        resolve: (lease) => {
          if (waiter.settled) return;
          waiter.settled = true;
          cleanup();
          resolve(lease);
        },
        reject: (e) => {
          if (waiter.settled) return;
          waiter.settled = true;
          cleanup();
          reject(e);
        },
      };
      const timer = setTimeout(() => waiter.reject(new GatewayError('pool_exhausted', this.#opts.name)), this.#opts.waitMs);
      timer.unref?.();
      const onAbort = (): void => waiter.reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Hands freed capacity to waiters in FIFO order, skipping those whose group holds its whole share. */
  #serveWaiters(): void {
    while (!this.#closed) {
      const w = this.#waiters.find((x) => !this.#atShare(this.#groupOf(x.key)));
      if (!w) return;
      const idle = this.#idle(w.key);
      if (idle) {
        w.resolve(this.#bind(idle, w.channel, w.key));
        continue;
      }
      if (!this.#hasRoom()) return;
      // A slot is the waiter's now: its wait is over (the connect has its own deadline), so stop
      // its timer. If the waiter goes away before the session is up, the session stays in the pool
      // idle; it is never bound to a call nobody waits for.
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.stopTimer();
      const group = this.#groupOf(w.key);
      this.#take(group);
      this.#create(w.key, w.signal).then(
        (s) => {
          if (w.settled) {
            this.#give(group);
            this.#unclaim(s);
            this.#serveWaiters();
          } else w.resolve(this.#bind(s, w.channel, w.key, true));
        },
        (e: unknown) => {
          this.#give(group);
          w.reject(e);
          this.#serveWaiters();
        },
      );
    }
  }

  #sweepIdle(): void {
    const cutoff = Date.now() - this.#opts.idleMs;
    for (const e of [...this.#entries]) if (!e.session.busy && e.session.lastUsed < cutoff) this.discard(e.session);
  }
}
