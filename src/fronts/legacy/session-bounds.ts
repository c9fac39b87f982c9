/**
 * Fair shares of the legacy sessions (streamable HTTP sessions and `/sse` streams, one pool): at most
 * `total` on this instance and `perPrincipal` for any one principal, sessions being opened included.
 *
 * When a principal is at its bound (or the pool is full), its least recently used idle session — no
 * request in flight, no open stream — is closed to make room: a client that abandons sessions without
 * DELETE (a host restarted, a buggy client opening one per request) keeps working instead of being
 * locked out until the idle timeout, and the closed session's client, if it ever comes back, gets 404,
 * on which a 2025 client must initialize again (2025-11-25 transports, session management). Only that
 * principal's own sessions are ever closed for it. With nothing idle to close, the refusal says whose
 * bound is full: 429 `principal_limit` (close one of yours) or 503 `total_limit` (retry shortly).
 */
import { limitError, toWireError } from '../../errors.js';
import { errorAnswer } from './error-answer.js';

export interface BoundedSession {
  readonly principal: string;
  /** Epoch ms of the last request. */
  readonly lastUsed: number;
  /** True when nothing of it is in flight or open (it may be closed to make room). */
  idle(): boolean;
}

export interface SessionLimits {
  readonly total: number;
  readonly perPrincipal: number;
}

export type Room<S> = { kind: 'room' } | { kind: 'evict'; session: S; whose: 'principal' | 'total' } | { kind: 'refused'; whose: 'principal' | 'total' };

/**
 * Whether `principal` may open one more session, given the open ones and those being opened
 * (`openingTotal`, `openingOwn`).
 */
export function roomFor<S extends BoundedSession>(
  open: Iterable<S>,
  principal: string,
  opening: { readonly total: number; readonly own: number },
  limits: SessionLimits,
): Room<S> {
  let total = opening.total;
  let own = opening.own;
  let candidate: S | undefined;
  for (const s of open) {
    total++;
    if (s.principal !== principal) continue;
    own++;
    if (s.idle() && (!candidate || s.lastUsed < candidate.lastUsed)) candidate = s;
  }
  const whose = own >= limits.perPrincipal ? 'principal' : total >= limits.total ? 'total' : undefined;
  if (!whose) return { kind: 'room' };
  return candidate ? { kind: 'evict', session: candidate, whose } : { kind: 'refused', whose };
}

export type Reservation<S> =
  { kind: 'reserved'; whose: 'principal' | 'total' | undefined; evict: S | undefined; done(): void } | { kind: 'refused'; whose: 'principal' | 'total' };

/** Counts the sessions being opened (not open yet) against the bounds, so concurrent opens cannot overshoot. */
export class SessionBounds<S extends BoundedSession> {
  readonly #limits: SessionLimits;
  readonly #opening = new Map<string, number>();
  #openingTotal = 0;

  constructor(limits: SessionLimits) {
    this.#limits = limits;
  }

  /** Room for one more session of `principal` (after closing `evict`, when set), held until `done()`; or the refusal. */
  reserve(open: Iterable<S>, principal: string): Reservation<S> {
    const room = roomFor(open, principal, { total: this.#openingTotal, own: this.#opening.get(principal) ?? 0 }, this.#limits);
    if (room.kind === 'refused') return room;
    this.#openingTotal++;
    this.#opening.set(principal, (this.#opening.get(principal) ?? 0) + 1);
    let done = false;
    return {
      kind: 'reserved',
      whose: room.kind === 'evict' ? room.whose : undefined,
      evict: room.kind === 'evict' ? room.session : undefined,
      done: () => {
        if (done) return;
        done = true;
        this.#openingTotal--;
        const n = (this.#opening.get(principal) ?? 1) - 1;
        if (n <= 0) this.#opening.delete(principal);
        else this.#opening.set(principal, n);
      },
    };
  }
}

/** The refusal as the HTTP answer (JSON-RPC error, 429 or 503 with Retry-After, as http/status.ts does). */
export function refusal(whose: 'principal' | 'total', limits: SessionLimits): Response {
  const own = whose === 'principal';
  const error = toWireError(
    limitError({
      whose,
      what: 'legacy sessions',
      limit: own ? 'gateway.maxLegacySessionsPerPrincipal' : 'gateway.maxLegacySessions',
      max: own ? limits.perPrincipal : limits.total,
      free: 'end one of its sessions (DELETE with its Mcp-Session-Id, or close its /sse stream); sessions with a request in flight or an open stream are never closed to make room',
    }),
  );
  // The status is the reason's, from the one table in errors.ts (principal_limit 429, total_limit 503).
  return errorAnswer(null, error);
}
