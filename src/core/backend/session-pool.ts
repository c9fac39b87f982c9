/**
 * The call sessions of one legacy backend, pooled by key (the caller's normalised input capabilities).
 *
 * Shared pools (streamable HTTP, where the wire correlates backend requests) keep one session per key
 * for any number of concurrent calls. Exclusive pools (stdio, HTTP+SSE, `sessionMode: "exclusive"`)
 * hand a session to one call at a time: up to `maxSessions`, then callers queue (FIFO) until a session
 * frees up, bounded by `waitMs` and the caller's signal. At most `maxStarts` sessions start at once;
 * callers beyond queue the same way and take the first session that is ready for them (a freed one or
 * the next started one). A waiter is settled exactly once: a session created for a waiter that has
 * gone meanwhile goes back to the pool instead of staying bound.
 *
 * State has one owner each: `#entries` (every open session, by session), `#capacity` (slots and
 * per-group shares), `#waiters` (the queue), `#connecting` (one connect per shared key), `#work`
 * (starts and closes, so `close()` resolves only when every session and process is gone). A queued
 * caller's wait is a span of its call's trace (`backend pool wait`).
 *
 * A caller that queues because the pool (or its group's share) is full takes the session of the call
 * that has waited longest for its client's answer, once that call has waited `reclaimAfterMs`: the call
 * is cancelled (`call_reclaimed`) and its session freed. A client that never answers (it left, its user
 * closed the dialog) would otherwise hold a backend process until the call's park timeout, and every
 * new call wait for it in vain.
 */
import { setMaxListeners } from 'node:events';
import { GatewayError } from '../../errors.js';
import { linkedController, raceSignal } from '../../util/abort.js';
import { background } from '../../util/background.js';
import { Tracked } from '../../util/tracked.js';
import { inSpan } from '../../util/tracing.js';
import type { BackendSession } from './backend-session.js';
import { PoolCapacity } from './pool-capacity.js';
import type { CallChannel } from './port.js';

/** A call waiting for its client on an exclusive session (`#reclaimForQueue`). */
interface Reclaimable {
  readonly session: BackendSession;
  readonly run: CallChannel;
  readonly since: number;
  readonly group: string;
  taken: boolean;
}

/** How soon the queue is looked at again for calls to reclaim while none waits for its client yet. */
const RECLAIM_LOOK_MS = 1_000;

export interface SessionPoolOptions {
  /** Backend name, for error messages. */
  readonly name: string;
  /** True when many calls may share one session. */
  readonly shared: boolean;
  readonly maxSessions: number;
  /** How long a caller may wait for a free session. */
  readonly waitMs: number;
  /** Told how long each queued call waited for a session (seconds), whether it got one or not. */
  readonly onWait?: ((seconds: number) => void) | undefined;
  /** Idle sessions older than this are closed. */
  readonly idleMs: number;
  /** Creates and connects a session for `key`; rejects on failure or abort. */
  readonly create: (key: string, signal: AbortSignal) => Promise<BackendSession>;
  /** Whose share a key counts against (the principal); default: one group for all. */
  readonly groupOf?: (key: string) => string;
  /** Sessions one group may hold at once in an exclusive pool (default: `maxSessions`). */
  readonly maxPerGroup?: number;
  /**
   * Sessions an exclusive pool starts at once (default: no limit). A start is mostly CPU (a process
   * loading its code): many at once on a small machine make each one slow, all finishing together late
   * (16 Node servers on 2 busy cores: about 20 s, the connect deadline), where a few at a time have the
   * first calls served after one start and every start well within its deadline.
   */
  readonly maxStarts?: number;
  /**
   * Idle sessions kept ready per key in an exclusive pool (started in the background after a session
   * is taken, within `maxSessions`): the next call skips the start-up, and requests a backend sends on
   * its own right after `initialize` happen before any call is bound to the session.
   */
  readonly spares?: number;
  /**
   * A call that has waited at least this long for its client's answer gives its exclusive session up
   * to a caller that must queue for one: it is cancelled (`call_reclaimed`), the longest-waiting first.
   * 0 or none: never.
   */
  readonly reclaimAfterMs?: number;
  /** Told each call cancelled so (for metrics). */
  readonly onReclaim?: (() => void) | undefined;
}

export interface AcquireOptions {
  /**
   * The call can share a session even in an exclusive pool, because the backend cannot send it
   * anything that needs correlating (the caller declared no input capability and wants no logs).
   * Such calls use sessions of their own key, never handed out exclusively.
   */
  readonly multiplex?: boolean;
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
  readonly settled: boolean;
  /** Leaves the queue: the waiter has a slot now, and its wait deadline is over. */
  leaveQueue(): void;
  resolve(lease: Lease): void;
  reject(e: unknown): void;
}

interface Entry {
  readonly key: string;
  /** Started for a caller that has not bound it yet: not idle for anyone else, not evictable. */
  reserved: boolean;
}

/** How a session enters the pool: `reserved` when a caller binds it next. */
interface StartOptions {
  readonly reserved: boolean;
}

export class SessionPool {
  readonly #opts: SessionPoolOptions;
  readonly #entries = new Map<BackendSession, Entry>();
  readonly #capacity: PoolCapacity;
  readonly #waiters: Waiter[] = [];
  readonly #connecting = new Map<string, Promise<BackendSession>>();
  readonly #work = new Tracked();
  readonly #closer = new AbortController();
  /** Keys with a spare session being started. */
  readonly #sparing = new Set<string>();
  readonly #sweeper: ReturnType<typeof setInterval>;
  /** Sessions whose call was cancelled to free them, until they are given back (`#reclaimForQueue`). */
  readonly #reclaimed = new Map<BackendSession, CallChannel>();
  #reclaimTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(options: SessionPoolOptions) {
    this.#opts = options;
    this.#capacity = new PoolCapacity(options.maxSessions, options.maxPerGroup);
    // Every start links its signal to this one while it lasts: up to `maxSessions` listeners at once, expected.
    setMaxListeners(0, this.#closer.signal);
    this.#sweeper = setInterval(() => this.#sweepIdle(), Math.max(1_000, Math.floor(options.idleMs / 2)));
    this.#sweeper.unref?.();
  }

  /** Session counts, for diagnostics and tests. */
  get stats(): { sessions: number; busy: number; waiting: number; connecting: number } {
    let busy = 0;
    for (const session of this.#entries.keys()) if (session.busy) busy++;
    return { sessions: this.#entries.size, busy, waiting: this.#waiters.length, connecting: this.#capacity.starting };
  }

  /**
   * A session for `channel` under `key` at once, when one is ready for it (the open shared session, or
   * an idle one within the caller's share); undefined when `acquire` would have to wait or start one.
   * What most calls take: no deadline, signal or promise is needed for it.
   */
  tryAcquire(key: string, channel: CallChannel, options: AcquireOptions = {}): Lease | undefined {
    if (this.#closed) throw new GatewayError('gateway_closing');
    if (this.#opts.shared || options.multiplex) {
      const session = this.#openShared(key);
      if (!session) return undefined;
      session.bindShared(channel);
      return this.#lease(session, channel);
    }
    if (this.#capacity.atShare(this.#groupOf(key))) return undefined;
    const idle = this.#idle(key);
    return idle ? this.#bind(idle, channel, key) : undefined;
  }

  /** A session for `channel` under `key`, waiting for one when the pool is full. */
  async acquire(key: string, channel: CallChannel, signal: AbortSignal, options: AcquireOptions = {}): Promise<Lease> {
    const ready = this.tryAcquire(key, channel, options);
    if (ready) return ready;
    if (this.#opts.shared || options.multiplex) {
      const session = await raceSignal(this.#sharedSession(key), signal);
      session.bindShared(channel);
      return this.#lease(session, channel);
    }
    const group = this.#groupOf(key);
    if (this.#capacity.atShare(group)) return this.#queued(key, channel, signal);
    if (!this.#canStart()) return this.#queued(key, channel, signal);
    this.#capacity.take(group);
    let session: BackendSession;
    try {
      session = await this.#create(key, signal, { reserved: true });
    } catch (e) {
      this.#capacity.give(group);
      this.#serveWaiters();
      throw e;
    }
    return this.#bind(session, channel, key, { taken: true });
  }

  /** Closes `session` (a session that must not be reused); `close()` waits for it. */
  discard(session: BackendSession): void {
    this.#entries.delete(session);
    this.#work.add(session.close());
  }

  /** Rejects every waiter, closes every session; resolves when all are closed. Idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#closer.abort(new GatewayError('gateway_closing'));
      clearInterval(this.#sweeper);
      clearTimeout(this.#reclaimTimer);
      for (const w of [...this.#waiters]) w.reject(new GatewayError('gateway_closing'));
      for (const session of [...this.#entries.keys()]) this.discard(session);
    }
    await this.#work.settled();
  }

  #groupOf(key: string): string {
    return this.#opts.groupOf?.(key) ?? '';
  }

  /** A session may start now: a start slot is free (`maxStarts`) and there is room (`#hasRoom`). */
  #canStart(): boolean {
    return this.#capacity.starting < (this.#opts.maxStarts ?? Infinity) && this.#hasRoom();
  }

  /**
   * Room for one more session. Sessions still closing do not count: a process may take a few seconds
   * to exit (stdin end, then SIGTERM, then SIGKILL), and a caller waiting for a slot must not wait for
   * that; so the number of processes can briefly exceed `maxSessions` by those on their way out.
   */
  #hasRoom(): boolean {
    return this.#capacity.fits(this.#entries.size) || this.#evictIdle();
  }

  /**
   * Starts a session for `key`, tracked by `close()`. When it ends, its start slot goes to the callers
   * queued behind it (a failed start frees its session slot as well). A session started for a caller
   * is reserved until that caller binds it, so nobody queued takes it meanwhile.
   */
  #create(key: string, signal: AbortSignal, options: StartOptions): Promise<BackendSession> {
    const started = this.#start(key, signal, options);
    const serve = (): void => this.#serveWaiters();
    this.#work.add(started.then(serve, serve));
    return started;
  }

  async #start(key: string, signal: AbortSignal, { reserved }: StartOptions): Promise<BackendSession> {
    this.#capacity.startBegun();
    const link = linkedController(signal, this.#closer.signal);
    let session: BackendSession;
    try {
      session = await this.#opts.create(key, link.controller.signal);
    } finally {
      link.dispose();
      this.#capacity.startEnded();
    }
    if (this.#closed) {
      this.#work.add(session.close());
      throw new GatewayError('gateway_closing');
    }
    this.#entries.set(session, { key, reserved });
    session.onClose(() => {
      this.#entries.delete(session);
      this.#serveWaiters();
    });
    return session;
  }

  /** The open shared session for `key`, if any. */
  #openShared(key: string): BackendSession | undefined {
    for (const [session, e] of this.#entries) if (e.key === key && !session.closed) return session;
    return undefined;
  }

  /** A shared session for `key`: the open one, else one connect however many callers ask meanwhile. */
  #sharedSession(key: string): Promise<BackendSession> {
    const open = this.#openShared(key);
    if (open) return Promise.resolve(open);
    let connecting = this.#connecting.get(key);
    if (!connecting) {
      connecting = this.#create(key, this.#closer.signal, { reserved: false }).finally(() => this.#connecting.delete(key));
      this.#connecting.set(key, connecting);
    }
    return connecting;
  }

  /** An idle session: of `key`, or of any key (one that may be closed to make room). */
  #idle(key?: string): BackendSession | undefined {
    for (const [session, e] of this.#entries) if ((key === undefined || e.key === key) && !e.reserved && !session.closed && !session.busy) return session;
    return undefined;
  }

  /** Closes one idle session of any key to make room. */
  #evictIdle(): boolean {
    const idle = this.#idle();
    if (idle) this.discard(idle);
    return idle !== undefined;
  }

  /** Marks a reserved session as free for others (its caller went away, or it is bound now). */
  #unreserve(session: BackendSession): void {
    const entry = this.#entries.get(session);
    if (entry) entry.reserved = false;
  }

  /** Binds an exclusive session to `channel`; its group's share is taken here unless `taken` already. */
  #bind(session: BackendSession, channel: CallChannel, key: string, { taken = false } = {}): Lease {
    const group = this.#groupOf(key);
    if (!taken) this.#capacity.take(group);
    this.#unreserve(session);
    session.bindExclusive(channel);
    this.#topUp(key);
    return this.#lease(session, channel, () => this.#capacity.give(group));
  }

  /** Starts a spare session for `key` when fewer than `spares` are idle or starting and there is room (no eviction). */
  #topUp(key: string): void {
    const spares = this.#opts.spares ?? 0;
    if (spares <= 0 || this.#closed || this.#sparing.has(key)) return;
    let idle = 0;
    for (const [session, e] of this.#entries) if (e.key === key && !session.closed && !session.busy) idle++;
    // A spare never takes a start slot from a caller that waits for one.
    const startFree = this.#capacity.starting < (this.#opts.maxStarts ?? Infinity) && this.#waiters.length === 0;
    if (idle >= spares || !startFree || !this.#capacity.fits(this.#entries.size)) return;
    this.#sparing.add(key);
    this.#create(key, this.#closer.signal, { reserved: false }).then(
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

  /** `#wait` as a span of the call's trace (`backend pool wait`), for how long a call queued for a session. */
  #queued(key: string, channel: CallChannel, signal: AbortSignal): Promise<Lease> {
    return inSpan('backend pool wait', { attributes: { 'mcp.backend': this.#opts.name } }, () => this.#wait(key, channel, signal));
  }

  /** Queues the caller until a slot is free, `waitMs` passes (`pool_exhausted`) or its signal aborts. */
  #wait(key: string, channel: CallChannel, signal: AbortSignal): Promise<Lease> {
    const queued = performance.now();
    return new Promise<Lease>((resolve, reject) => {
      let settled = false;
      const leaveQueue = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        if (this.#waiters.length === 0) clearTimeout(this.#reclaimTimer);
      };
      const settle = (finish: () => void): void => {
        if (settled) return;
        settled = true;
        leaveQueue();
        this.#opts.onWait?.((performance.now() - queued) / 1000);
        finish();
      };
      const waiter: Waiter = {
        key,
        channel,
        signal,
        get settled() {
          return settled;
        },
        leaveQueue,
        resolve: (lease) => settle(() => resolve(lease)),
        reject: (e) => settle(() => reject(e)),
      };
      const timer = setTimeout(() => waiter.reject(new GatewayError('pool_exhausted', this.#exhausted())), this.#opts.waitMs);
      timer.unref?.();
      const onAbort = (): void => waiter.reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
      this.#reclaimForQueue();
    });
  }

  /** What a caller that waited in vain is told: the backend, and how many of its sessions wait for their clients (abandoned calls, often). */
  #exhausted(): string {
    let parked = 0;
    for (const session of this.#entries.keys()) if (session.exclusiveRun?.waitingSince?.() !== undefined) parked++;
    if (parked === 0) return this.#opts.name;
    const after = this.#opts.reclaimAfterMs ?? 0;
    const held = `${parked} of its ${this.#entries.size} sessions hold calls waiting for their clients' answers`;
    return after > 0
      ? `${this.#opts.name} (${held}; such a call gives its session up to a waiting one once it has waited gateway.reclaimParkedAfterMs, ${after / 1000} s)`
      : `${this.#opts.name} (${held}, until parkTimeoutMs: gateway.reclaimParkedAfterMs is 0)`;
  }

  /**
   * For each queued caller that only a freed session can serve (the pool, or its group's share, is
   * full), and that no reclaim under way will serve, cancels the call that has waited longest for its
   * client, once that call has waited `reclaimAfterMs` (of the caller's group when its share is what is
   * full). Runs when a caller queues, after each hand-out that leaves callers queued, and on one timer
   * for the next call to reach the age (or, with none waiting for its client yet, a second later). One
   * pass over the sessions, and over the queue only when a call is past the age.
   */
  #reclaimForQueue(): void {
    const after = this.#opts.reclaimAfterMs ?? 0;
    clearTimeout(this.#reclaimTimer);
    this.#reclaimTimer = undefined;
    if (after <= 0 || this.#closed || this.#waiters.length === 0) return;
    // Reclaims under way (cancelled, session not given back yet): each frees one session.
    for (const [session, run] of this.#reclaimed) if (session.exclusiveRun !== run || !this.#entries.has(session)) this.#reclaimed.delete(session);
    const now = Date.now();
    const { due, next } = this.#reclaimable(now - after);
    const at = next !== undefined ? next + after : due.length === 0 ? now + Math.min(after, RECLAIM_LOOK_MS) : undefined;
    if (at !== undefined) {
      this.#reclaimTimer = setTimeout(() => this.#reclaimForQueue(), Math.max(1, at - now));
      this.#reclaimTimer.unref?.();
    }
    if (due.length === 0) return;
    // Cancelled once the queue was read: what a cancellation frees goes through `#serveWaiters` as any release.
    for (const run of this.#victims(due)) {
      run.reclaim?.(new GatewayError('call_reclaimed', this.#opts.name));
      this.#opts.onReclaim?.();
    }
  }

  /**
   * The calls waiting for their client on exclusive sessions, not reclaimed already: those waiting since
   * `dueBy` or earlier, longest first, and since when the next of the others has waited.
   */
  #reclaimable(dueBy: number): { due: Reclaimable[]; next: number | undefined } {
    const due: Reclaimable[] = [];
    let next: number | undefined;
    for (const [session, entry] of this.#entries) {
      const run = session.exclusiveRun;
      if (!run?.reclaim || this.#reclaimed.has(session)) continue;
      const since = run.waitingSince?.();
      if (since === undefined) continue;
      if (since <= dueBy) due.push({ session, run, since, group: this.#groupOf(entry.key), taken: false });
      else if (next === undefined || since < next) next = since;
    }
    return { due: due.sort((a, b) => a.since - b.since), next };
  }

  /** Which of `due` to cancel: one for each queued caller only a freed session can serve, less the reclaims under way. */
  #victims(due: Reclaimable[]): CallChannel[] {
    // Room for a start, or an idle session to make room with: a caller whose group has share left waits for a start slot, not a session.
    const room = this.#capacity.fits(this.#entries.size) || this.#idle() !== undefined;
    let underWay = this.#reclaimed.size;
    let cursor = 0;
    const victims: CallChannel[] = [];
    for (const w of this.#waiters) {
      if (victims.length === due.length) break;
      const group = this.#groupOf(w.key);
      const ownGroup = this.#capacity.atShare(group);
      if (!ownGroup && room) continue;
      if (underWay > 0) {
        underWay--;
        continue;
      }
      let pick: Reclaimable | undefined;
      if (ownGroup) pick = due.find((c) => !c.taken && c.group === group);
      else {
        while (cursor < due.length && due[cursor]!.taken) cursor++;
        pick = due[cursor];
      }
      if (!pick) continue;
      pick.taken = true;
      this.#reclaimed.set(pick.session, pick.run);
      victims.push(pick.run);
    }
    return victims;
  }

  /** Hands freed capacity to waiters; those it leaves queued may have a parked call's session reclaimed for them. */
  #serveWaiters(): void {
    this.#handOut();
    if (this.#waiters.length > 0) this.#reclaimForQueue();
  }

  /** Hands freed capacity to waiters in FIFO order, skipping those whose group holds its whole share. */
  #handOut(): void {
    while (!this.#closed) {
      const w = this.#waiters.find((x) => !this.#capacity.atShare(this.#groupOf(x.key)));
      if (!w) return;
      const idle = this.#idle(w.key);
      if (idle) {
        w.resolve(this.#bind(idle, w.channel, w.key));
        continue;
      }
      if (!this.#canStart()) return;
      // A slot is the waiter's now: its wait is over (the connect has its own deadline). If the waiter
      // goes away before the session is up, the session stays in the pool idle; it is never bound to
      // a call nobody waits for.
      w.leaveQueue();
      this.#startFor(w);
    }
  }

  /** Starts a session for a waiter that has left the queue with a slot. */
  #startFor(w: Waiter): void {
    const group = this.#groupOf(w.key);
    this.#capacity.take(group);
    background(
      'start a session for a queued call',
      this.#create(w.key, w.signal, { reserved: true }).then(
        (session) => {
          if (!w.settled) return w.resolve(this.#bind(session, w.channel, w.key, { taken: true }));
          this.#capacity.give(group);
          this.#unreserve(session);
          this.#serveWaiters();
        },
        (e: unknown) => {
          this.#capacity.give(group);
          w.reject(e);
          this.#serveWaiters();
        },
      ),
    );
  }

  #sweepIdle(): void {
    const cutoff = Date.now() - this.#opts.idleMs;
    for (const session of [...this.#entries.keys()]) if (!session.busy && session.lastUsed < cutoff) this.discard(session);
  }
}
