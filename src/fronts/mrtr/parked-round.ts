/**
 * A parked call seen from a front that fulfils its input requests itself while the request stays open
 * (the legacy client route sends them to its client as real requests): which of the round's requests
 * the backend stops waiting for, the call's events in the meantime, and a way to pass a client's
 * refusal on to the backend or to give the call up.
 */
import type { Call, CallOutcome } from '../../core/calls/call.js';
import { GatewayError } from '../../errors.js';
import { ClientRefusal } from '../../core/backend/port.js';
import { relayEvents, type RelayCursor, type RelayView } from './round-waiter.js';

/** Why a request to the client is cancelled when the backend no longer waits for it (fronts that ask on a call's behalf). */
export const WITHDRAWN = new GatewayError('cancelled', 'the backend no longer waits for this request');

export interface ParkedRound {
  /** The input keys this round asked for. */
  readonly keys: readonly string[];
  /**
   * Until `signal` aborts: relays the call's events as the round did, and calls `onGone` once for each
   * of the round's keys the call stops waiting on without an answer (the backend withdrew it, or the
   * call ended, which ends the watch). Never rejects.
   */
  watch(onGone: (key: string) => void, signal: AbortSignal): Promise<void>;
  /** Fails the backend's request `key` with the client's error (the call goes on). False when not awaited any more. */
  refuse(key: string, code: number, message: string, data?: unknown): boolean;
  /** Gives the call up (the client went away). */
  cancel(reason: unknown): void;
  /**
   * Once the call has ended (it went on without the round's answers, failed, or was cancelled): its
   * answer, as the request's retry would have had it. Undefined while it goes on.
   */
  ended(): Promise<Record<string, unknown>> | undefined;
}

/**
 * The parked round `keys` of `call`: its events go where `view` says from `cursor` on (the cursor the
 * rounds of the call share), and `answerEnd` words the call's end as the request's retry would get it.
 */
export function parkedRound(
  call: Call,
  keys: readonly string[],
  answerEnd: (outcome: CallOutcome) => Promise<Record<string, unknown>>,
  view: RelayView,
  cursor: RelayCursor,
): ParkedRound {
  const refused = new Set<string>();
  return {
    keys,
    async watch(onGone, signal) {
      const left = new Set(keys);
      while (!signal.aborted) {
        cursor.seq = relayEvents(call, cursor.seq, view);
        const pending = new Set(call.done ? [] : call.pending.map((p) => p.key));
        for (const key of [...left]) {
          if (pending.has(key)) continue;
          left.delete(key);
          if (!refused.has(key)) onGone(key);
        }
        if (call.done) return;
        try {
          await call.nextChange(signal);
        } catch {
          return; // the signal aborted
        }
      }
    },
    refuse(key, code, message, data) {
      refused.add(key);
      return call.refuse(key, new ClientRefusal(code, message, data));
    },
    cancel(reason) {
      call.cancel(reason);
    },
    ended() {
      const { outcome } = call;
      if (!outcome) return undefined;
      cursor.seq = relayEvents(call, cursor.seq, view);
      return answerEnd(outcome);
    },
  };
}
