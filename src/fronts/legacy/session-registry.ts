/**
 * The open legacy sessions of this instance — streamable HTTP sessions and 2024-11-05 `/sse` sessions
 * alike — and the one way each enters and leaves. `add` takes in an opened session and arranges that
 * its connection closing (a DELETE, the `/sse` stream gone) removes it; `remove` is the one way out,
 * whatever the reason: that, the idle timeout, making room for its principal, the front closing. It
 * always takes the session out, drops its state scope, ends its resource subscriptions and closes it.
 *
 * The registry also keeps the bounds (./session-bounds.ts: reserving room for a session being opened,
 * closing its principal's least recently used idle session if it must) and the idle sweeper: a session
 * unused for `idleMs` is removed.
 */
import type { Logger } from '../../log.js';
import { background } from '../../util/background.js';
import { systemClock, type Clock, type ClockTimer } from '../../util/clock.js';
import { SessionBounds, type BoundedSession, type Reservation, type SessionLimits } from './session-bounds.js';
import { instanceOfSessionId } from './session-ids.js';

/** What the registry needs of a session (`Session` in ./session.ts). */
export interface RegisteredSession extends BoundedSession {
  readonly id: string;
  /** Its state scope inside its principal's. */
  readonly scope: string;
  readonly subscriptions: { endAll(): Promise<void> };
  /** It was used at `now` (epoch ms). */
  touch(now: number): void;
  /** Calls `listener` once its connection has closed (at once if it has). */
  onClosed(listener: () => void): void;
  /** Closes it; never rejects. */
  close(): Promise<void>;
}

/** What a session's end drops of the state scopes (the proxy tools'). */
export interface ScopeDrop {
  drop(principal: string, scope: string): void;
}

export interface SessionRegistryOptions {
  readonly limits: SessionLimits;
  /** Sessions unused this long are removed. */
  readonly idleMs: number;
  readonly scopes?: ScopeDrop | undefined;
  readonly log: Logger;
  /** Default: the system clock. */
  readonly clock?: Clock | undefined;
}

/** The instance and a few characters of the random part: enough to follow, not enough to use. */
function shortId(id: string): string {
  return `${instanceOfSessionId(id) ?? ''}~${id.slice(-8)}`;
}

/** The open legacy sessions of this instance, by id; `close()` removes them all (idempotent). */
export class SessionRegistry<S extends RegisteredSession> {
  readonly limits: SessionLimits;
  readonly #sessions = new Map<string, S>();
  readonly #bounds: SessionBounds<S>;
  readonly #options: SessionRegistryOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  #sweeper: ClockTimer | undefined;
  #closed = false;

  constructor(options: SessionRegistryOptions) {
    this.limits = options.limits;
    this.#options = options;
    this.#bounds = new SessionBounds<S>(options.limits);
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log;
    this.#scheduleSweep();
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** The open sessions. */
  sessions(): IterableIterator<S> {
    return this.#sessions.values();
  }

  /** The session `id` when it is `principal`'s: another principal's session is as unknown as a closed one. */
  get(id: string, principal: string): S | undefined {
    const session = this.#sessions.get(id);
    return session?.principal === principal ? session : undefined;
  }

  /**
   * Room for one more session of `principal`, held until `done()` (call it once the session is added, or
   * failed to open); its least recently used idle session is removed first when it is at its bound. Or
   * the refusal: whose bound is full.
   */
  async reserve(principal: string): Promise<Reservation<S>> {
    const r = this.#bounds.reserve(this.#sessions.values(), principal);
    const limit = r.whose === 'principal' ? 'gateway.maxLegacySessionsPerPrincipal' : 'gateway.maxLegacySessions';
    if (r.kind === 'refused') {
      this.#log.info({ principal, limit }, 'legacy session refused: limit reached');
      return r;
    }
    if (r.evict) {
      const session = shortId(r.evict.id);
      this.#log.info({ session, principal, limit }, 'legacy session closed to make room: its principal is at its limit and it was idle the longest');
      // It is out at once; what its close still does cannot fail the new session.
      await this.remove(r.evict).catch((e: unknown) => this.#log.warn({ session, err: (e as Error).message }, 'closing a legacy session failed'));
    }
    return r;
  }

  /** Takes in an opened session; it leaves through `remove`, which its connection closing calls too. */
  add(session: S): void {
    this.#sessions.set(session.id, session);
    session.onClosed(() => background('remove a legacy session whose connection closed', this.remove(session), this.#log));
    if (this.#closed) background('remove a legacy session opened while the front closed', this.remove(session), this.#log);
  }

  /**
   * The one way out: takes the session out, drops its state scope, ends its resource subscriptions (the
   * last session to leave a URI unsubscribes at its backend) and closes it, which aborts what its
   * requests wait for (the dispatcher then cancels their calls). Once per session: later calls, and
   * calls for a session never added, do nothing.
   */
  async remove(session: S): Promise<void> {
    if (this.#sessions.get(session.id) !== session) return;
    this.#sessions.delete(session.id);
    this.#options.scopes?.drop(session.principal, session.scope);
    await Promise.all([session.subscriptions.endAll(), session.close()]);
  }

  /** Removes every session and stops the sweeper. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#sweeper?.cancel();
    await Promise.all([...this.#sessions.values()].map((s) => this.remove(s)));
  }

  /**
   * Removes the sessions unused for `idleMs`. A session at work (a request in flight, a call waiting
   * for its client's answer, an open stream: not `idle()`) is in use now, whenever its last request
   * came: its idle time starts once it stops (a long call's session is not closed under it, nor at once
   * after it). A 2024-11-05 session, whose stream is open as long as it lives, leaves when that closes.
   */
  sweep(): void {
    const now = this.#clock.now();
    const cutoff = now - this.#options.idleMs;
    for (const s of [...this.#sessions.values()]) {
      if (!s.idle()) {
        s.touch(now);
        continue;
      }
      if (s.lastUsed >= cutoff) continue;
      this.#log.info({ session: shortId(s.id) }, 'legacy session idle: closed');
      background('close an idle legacy session', this.remove(s), this.#log);
    }
  }

  /** Sweeps every half `idleMs`, within [1 s, 60 s]. */
  #scheduleSweep(): void {
    const every = Math.max(1_000, Math.min(60_000, Math.floor(this.#options.idleMs / 2)));
    const tick = (): void => {
      this.sweep();
      this.#sweeper = this.#clock.schedule(tick, every);
    };
    this.#sweeper = this.#clock.schedule(tick, every);
  }
}
