/**
 * The primary session of a legacy backend: the connection its lists and completions go through, and
 * the one that tells its health. Connected at start; when an attempt fails or the session is lost, the
 * next attempt waits with exponential backoff, and while it waits users fail fast (a flood of list
 * requests must not become a flood of connection attempts, for stdio of process spawns). A periodic
 * health check judges its liveness (liveness.ts): a backend gone is closed and reconnected; one silent
 * on every exchange for `hungAfterMs` is closed too and stays `silent` until it connects again —
 * lists come from cache meanwhile, and requests to it (over HTTP its calls too) fail at once instead
 * of waiting for their timeouts.
 *
 * One `state` union says where the connection is; `up`, `silent` and `health()` read it.
 */
import { GatewayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { anySignal, raceSignal } from '../../util/abort.js';
import { background } from '../../util/background.js';
import type { BackendSession } from './backend-session.js';
import type { BackendHealth } from './port.js';
import { StartFailure, causeText } from './start-failure.js';

export interface PrimaryConnectionOptions {
  /** The backend's name, for errors and health. */
  readonly name: string;
  /** Starts and connects a session for the primary; rejects on failure or abort. */
  readonly start: (signal: AbortSignal) => Promise<BackendSession>;
  readonly logger: Logger;
  /** How long a user waits for a connection still being made (then `backend_timeout`). */
  readonly listTimeoutMs: number;
  /** How often the liveness is judged (0: never). */
  readonly healthCheckMs: number;
  /** Silence on every exchange after which the backend is taken for hung (for the message; the session judges). */
  readonly hungAfterMs: number;
  /** The primary connected, or was lost (a reconnect with backoff follows). Called after the state changed. */
  readonly onConnection?: (change: 'connected' | 'lost') => void;
}

/** Why the primary is not up, since its last success. */
export interface Trouble {
  /** Failed attempts and losses since the last success (the backoff grows with them). */
  readonly failures: number;
  /** Why the last attempt failed, with the last lines a stdio backend wrote to stderr. */
  readonly lastFailure?: { readonly message: string; readonly stderr: readonly string[] } | undefined;
  /** The backend went silent on every exchange: until it connects again it is not answering. */
  readonly silent: boolean;
}

/**
 * `idle`: never tried; `connecting`: an attempt is under way; `up`: connected (a session found closed
 * is lost); `backoff`: the next attempt is scheduled; `closed`: for good.
 */
export type PrimaryState =
  | { readonly kind: 'idle'; readonly trouble: Trouble }
  | { readonly kind: 'connecting'; readonly attempt: Promise<BackendSession>; readonly trouble: Trouble }
  | { readonly kind: 'up'; readonly session: BackendSession; readonly connectedAt: string }
  | { readonly kind: 'backoff'; readonly timer: ReturnType<typeof setTimeout>; readonly trouble: Trouble }
  | { readonly kind: 'closed'; readonly trouble: Trouble };

const NO_TROUBLE: Trouble = { failures: 0, silent: false };
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 30_000;

/** The delay before the next attempt after `failures` failed ones: 250 ms doubling, at most 30 s. */
export function backoffDelay(failures: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(failures, 7));
}

export class PrimaryConnection {
  readonly #opts: PrimaryConnectionOptions;
  readonly #log: Logger;
  readonly #closer = new AbortController();
  readonly #healthTimer: ReturnType<typeof setInterval> | undefined;
  #state: PrimaryState = { kind: 'idle', trouble: NO_TROUBLE };
  /** The failure last logged at warn while the backend stays down (each cause is logged once). */
  #loggedCause: string | undefined;
  /** A liveness judgement under way (one at a time). */
  #judging: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  /** The capabilities the server declared last (answered while it cannot be asked). */
  #lastCapabilities: Record<string, unknown> | undefined;

  constructor(options: PrimaryConnectionOptions) {
    this.#opts = options;
    this.#log = options.logger;
    if (options.healthCheckMs > 0) {
      this.#healthTimer = setInterval(() => background('backend health check', this.checkHealth(), this.#log), options.healthCheckMs);
      this.#healthTimer.unref?.();
    }
  }

  get state(): PrimaryState {
    return this.#state;
  }

  /** True when the primary session is connected. */
  get up(): boolean {
    return this.#state.kind === 'up' && !this.#state.session.closed;
  }

  /** True from a liveness check that found the backend silent until it connects again. */
  get silent(): boolean {
    return this.#state.kind !== 'up' && this.#state.trouble.silent;
  }

  health(): BackendHealth {
    const s = this.#state;
    const name = this.#opts.name;
    if (s.kind === 'up') return s.session.closed ? { name, state: 'connecting', failures: 0 } : { name, state: 'up', failures: 0, connectedAt: s.connectedAt };
    const { failures, lastFailure } = s.trouble;
    const out: { -readonly [K in keyof BackendHealth]: BackendHealth[K] } = { name, state: failures === 0 ? 'connecting' : 'down', failures };
    if (lastFailure) {
      out.lastError = lastFailure.message;
      if (lastFailure.stderr.length) out.stderr = lastFailure.stderr;
    }
    return out;
  }

  /**
   * The primary session, connecting it if needed. Throws `backend_unavailable` when it cannot (at
   * once while a reconnect waits for its backoff), `gateway_closing` once closed.
   */
  session(): Promise<BackendSession> {
    const s = this.#state;
    switch (s.kind) {
      case 'closed':
        return Promise.reject(new GatewayError('gateway_closing'));
      case 'up':
        if (!s.session.closed) return Promise.resolve(s.session);
        this.#lose(s.session, NO_TROUBLE);
        return Promise.reject(new GatewayError('backend_unavailable', this.#opts.name));
      case 'backoff':
        return Promise.reject(new GatewayError('backend_unavailable', this.#opts.name));
      case 'connecting':
        return s.attempt;
      case 'idle':
        return this.#connect(s.trouble);
    }
  }

  /**
   * The primary session; a connection still being made (a frozen backend) is waited for no longer
   * than `listTimeoutMs` (then `backend_timeout`), nor past `signal`.
   */
  async within(signal?: AbortSignal): Promise<BackendSession> {
    const limit = AbortSignal.timeout(this.#opts.listTimeoutMs);
    try {
      return await raceSignal(this.session(), signal ? anySignal([signal, limit]) : limit);
    } catch (e) {
      if (limit.aborted && !signal?.aborted)
        throw new GatewayError('backend_timeout', `${this.#opts.name} (not connected within ${this.#opts.listTimeoutMs} ms)`);
      throw e;
    }
  }

  /** The server's capabilities; while it is down or silent, the last ones it declared. */
  async capabilities(): Promise<Record<string, unknown> | undefined> {
    if (this.silent) return this.#lastCapabilities;
    return this.within().then(
      (s) => (this.#lastCapabilities = s.serverCapabilities as Record<string, unknown> | undefined),
      () => this.#lastCapabilities,
    );
  }

  /**
   * Judges the primary's liveness (see liveness.ts). Only the primary is closed when the backend is
   * silent: calls parked on other sessions stay (over stdio they are other processes; over HTTP a
   * silent server may still come back and finish them).
   */
  checkHealth(): Promise<void> {
    this.#judging ??= this.#judge().finally(() => (this.#judging = undefined));
    return this.#judging;
  }

  /** Ends the connection and any attempt or backoff; resolves when the session has closed. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const s = this.#state;
      this.#closer.abort(new GatewayError('gateway_closing'));
      clearInterval(this.#healthTimer);
      this.#state = { kind: 'closed', trouble: s.kind === 'up' ? NO_TROUBLE : s.trouble };
      if (s.kind === 'backoff') clearTimeout(s.timer);
      if (s.kind === 'connecting') await s.attempt.catch(() => undefined);
      if (s.kind === 'up') await s.session.close();
    })();
    return this.#closing;
  }

  async #judge(): Promise<void> {
    const s = this.#state;
    if (s.kind !== 'up' || s.session.closed) return;
    const { session } = s;
    const verdict = await session.liveness();
    if (verdict === 'alive' || !this.#isPrimary(session) || session.closed) return;
    if (verdict === 'gone') {
      this.#lose(session, NO_TROUBLE);
      await session.close();
      return;
    }
    const message = `silent on every exchange for ${this.#opts.hungAfterMs} ms (did not answer a ping, sent nothing else)`;
    this.#log.warn({ err: message, hungAfterMs: this.#opts.hungAfterMs }, 'backend hung; closing its connection and reconnecting');
    // The silence counts as a failure, and the loss it forces as another.
    this.#lose(session, { failures: 1, silent: true, lastFailure: { message, stderr: session.stderrTail.slice(-5) } });
    await session.close();
  }

  #isPrimary(session: BackendSession): boolean {
    return this.#state.kind === 'up' && this.#state.session === session;
  }

  /** One connection attempt; on failure the next is scheduled with backoff (logged at warn). */
  #connect(trouble: Trouble): Promise<BackendSession> {
    const attempt = (async () => {
      let session: BackendSession;
      try {
        session = await this.#opts.start(this.#closer.signal);
      } catch (e) {
        if (this.#closer.signal.aborted) throw new GatewayError('gateway_closing');
        const lastFailure = { message: causeText(e), stderr: e instanceof StartFailure ? e.stderr : [] };
        const retryInMs = this.#backoff({ ...trouble, lastFailure });
        // Its cause once at warn (again only when it changes); the same failure again is debug.
        const repeated = this.#loggedCause === lastFailure.message;
        this.#loggedCause = lastFailure.message;
        this.#log[repeated ? 'debug' : 'warn'](
          { err: lastFailure.message, attempt: trouble.failures + 1, retryInMs, ...(lastFailure.stderr.length ? { stderr: lastFailure.stderr } : {}) },
          repeated ? 'backend still unavailable; retrying with backoff' : 'backend unavailable; retrying with backoff',
        );
        throw new GatewayError('backend_unavailable', this.#opts.name, { cause: e });
      }
      if (this.#closer.signal.aborted) {
        await session.close();
        throw new GatewayError('gateway_closing');
      }
      this.#connected(session);
      return session;
    })();
    this.#state = { kind: 'connecting', attempt, trouble };
    return attempt;
  }

  #connected(session: BackendSession): void {
    this.#loggedCause = undefined;
    this.#state = { kind: 'up', session, connectedAt: new Date().toISOString() };
    this.#log.info({ server: session.serverInfo?.name }, 'backend connected');
    this.#opts.onConnection?.('connected');
    session.onClose(() => this.#lose(session, NO_TROUBLE));
  }

  /** The primary `session` is lost (closed, gone or silent): back off, then reconnect. No-op for a session no longer primary. */
  #lose(session: BackendSession, trouble: Trouble): void {
    if (!this.#isPrimary(session)) return;
    this.#backoff(trouble);
    this.#log.warn({ stderr: session.stderrTail.slice(-5) }, 'backend connection lost; reconnecting');
    this.#opts.onConnection?.('lost');
  }

  /** Schedules the next attempt after one more failure than `trouble` counts; returns its delay. */
  #backoff(trouble: Trouble): number {
    const delay = backoffDelay(trouble.failures);
    const timer = setTimeout(() => {
      // A failed attempt is logged (and backs off again) in #connect.
      if (this.#state.kind === 'backoff' && this.#state.timer === timer) this.#connect(this.#state.trouble).catch(() => undefined);
    }, delay);
    timer.unref?.();
    this.#state = { kind: 'backoff', timer, trouble: { ...trouble, failures: trouble.failures + 1 } };
    return delay;
  }
}
