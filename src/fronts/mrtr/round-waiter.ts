/**
 * Waits on a call for the next thing an MRTR round answers with (2026-07-28 basic/patterns/mrtr.mdx):
 * the call's end, or its outstanding input requests once the backend has been quiet for `quietMs`
 * after its last one, or `coalesceMs` after the first one whatever comes (requests a backend makes
 * together go out in one round, with no fixed wait: a backend that asks once is answered as soon as
 * it has gone quiet), or the moment the call may become a task.
 * Meanwhile the call's events are relayed to the round's stream: progress under the round's
 * `progressToken`, log lines at or above its `logLevel`; every event logged before the call ended is
 * relayed before the round returns. Nothing of the call is consumed: another reader sees the same state.
 *
 * A round's timings (coalescing, promotion) are milliseconds measured against the call's own stamps
 * (`Call.lastInputAt`, stamped by the engine on the system clock), so they read the system clock; the
 * injected clock times what tests move instead of sleeping: parked-call and requestState expiry.
 */
import { LoggingLevelSchema } from '@modelcontextprotocol/core';
import type { LoggingLevel } from '@modelcontextprotocol/server';
import type { Call, CallOutcome, PendingInput } from '../../core/calls/call.js';
import { abortReason } from '../../util/abort.js';
import { systemClock } from '../../util/clock.js';
import type { LogTap, NotificationSink } from '../dialect.js';

/** Where a call's events go: progress under `progressToken`, log lines at or above `logLevel`. */
export interface RelayView {
  readonly sink?: NotificationSink | undefined;
  readonly progressToken?: string | number | undefined;
  readonly logLevel?: LoggingLevel | undefined;
  /** Sees every log line, whatever the level (a session's log buffer). */
  readonly logTap?: LogTap | undefined;
}

/** A call's relay position, shared by everything that relays its events to one client across rounds. */
export interface RelayCursor {
  /** Events after this sequence number are still to be relayed; advanced as events go out. */
  seq: number;
}

export interface RoundView extends RelayView {
  readonly signal: AbortSignal;
  /** The longest an input round waits for more requests after the first (an upper bound). */
  readonly coalesceMs: number;
  /** The round goes out once no new request has come for this long; 0 (the default): one event-loop turn. */
  readonly quietMs?: number | undefined;
  /** Relay events after this sequence number. */
  readonly since: number;
  /**
   * After how long (from the start of the wait) the call may become a task: if by then it has neither
   * ended nor asked for input, the round ends with `promote`. Input that arrives first still makes an
   * input round (MRTR exchanges before a task's creation finish synchronously).
   */
  readonly promoteAfterMs?: number | undefined;
}

export type RoundEnd =
  { kind: 'input'; pending: PendingInput[]; seq: number } | { kind: 'done'; outcome: CallOutcome; seq: number } | { kind: 'promote'; seq: number };

const LEVELS = LoggingLevelSchema.options;

/** Resolves with the round's end; rejects when `view.signal` aborts. */
export async function waitForRound(call: Call, view: RoundView): Promise<RoundEnd> {
  let seq = view.since;
  const promoteAt = view.promoteAfterMs !== undefined ? systemClock.now() + view.promoteAfterMs : undefined;
  const quietMs = Math.min(view.quietMs ?? 0, view.coalesceMs);
  /** When this wait first saw input outstanding: the window's start. */
  let windowFrom: number | undefined;
  /** How many requests the call had made when a turn of the event loop was last let pass. */
  let turnedAfter: number | undefined;
  for (;;) {
    seq = relayEvents(call, seq, view);
    if (call.outcome) return { kind: 'done', outcome: call.outcome, seq };
    const pending = call.pending;
    const now = systemClock.now();
    if (pending.length > 0) windowFrom ??= Math.min(now, call.lastInputAt);
    const quietFor = now - call.lastInputAt;
    const open = windowFrom === undefined ? 0 : now - windowFrom;
    if (pending.length > 0 && (quietFor >= quietMs || open >= view.coalesceMs)) {
      // Quiet means no new request through a whole turn of the event loop, I/O included: an expired
      // timer runs before the loop reads the sockets and pipes, where the backend's next request may
      // already be waiting (requests a backend writes together arrive in one read or the next).
      if (open >= view.coalesceMs || turnedAfter === call.inputsAsked) return { kind: 'input', pending, seq };
      turnedAfter = call.inputsAsked;
      await oneTurn(view.signal);
      continue;
    }
    let wait = pending.length > 0 ? Math.min(quietMs - quietFor, view.coalesceMs - open) : undefined;
    if (promoteAt !== undefined && pending.length === 0) {
      if (now >= promoteAt) return { kind: 'promote', seq };
      wait = promoteAt - now;
    }
    await nextChangeOrTimeout(call, wait, view.signal);
  }
}

/** Resolves after the event loop's next turn (I/O read meanwhile); rejects when `signal` aborts. */
function oneTurn(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve) => setImmediate(resolve));
}

async function nextChangeOrTimeout(call: Call, ms: number | undefined, signal: AbortSignal): Promise<void> {
  if (ms === undefined) return call.nextChange(signal);
  const timer = new AbortController();
  const t = setTimeout(() => timer.abort(), ms);
  t.unref?.();
  try {
    await call.nextChange(AbortSignal.any([signal, timer.signal]));
  } catch (e) {
    if (signal.aborted) throw abortReason(signal);
    if (!timer.signal.aborted) throw e;
  } finally {
    clearTimeout(t);
  }
}

/** Relays the call's events after `since`; returns the new position. */
export function relayEvents(call: Call, since: number, view: RelayView): number {
  const { events } = call.events(since);
  const { sink, progressToken, logLevel, logTap } = view;
  for (const { event } of events) {
    if (event.kind === 'log') logTap?.(call.backend, event.level, event.params);
    if (!sink) continue;
    if (event.kind === 'progress' && progressToken !== undefined) {
      sink({ method: 'notifications/progress', params: { progressToken, ...event.progress } });
    } else if (event.kind === 'log' && logLevel !== undefined && LEVELS.indexOf(event.level) >= LEVELS.indexOf(logLevel)) {
      sink({ method: 'notifications/message', params: event.params });
    }
  }
  return Math.max(since, call.lastEventSeq);
}
