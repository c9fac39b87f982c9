/**
 * Waits on a call for the next thing an MRTR round answers with (2026-07-28 basic/patterns/mrtr.mdx):
 * the call's end, or its outstanding input requests once the backend has been quiet for `quietMs`
 * after its last one, or `coalesceMs` after the first one whatever comes (requests a backend makes
 * together go out in one round, with no fixed wait: a backend that asks once is answered as soon as
 * it has gone quiet; one whose operation's calls asked more together in this wave is waited for until
 * it has made as many, core/calls/ask-patterns.ts), or the moment the call may become a task.
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
import type { CancelSource } from '../../util/lifeline.js';
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
  readonly signal: CancelSource;
  /** The longest an input round waits for more requests after the first (an upper bound). */
  readonly coalesceMs: number;
  /**
   * For a backend whose activity cannot be seen (`Call.backendActivity` unknown: HTTP), the round goes
   * out once no new request has come for this long (ms, at most `coalesceMs`) and one more I/O turn;
   * 0 (the default): the turn alone. A function is asked once per round, when needed, with whether the
   * call's operation has been seen asking for things together (`Call.asksTogether`): one that asks one
   * thing at a time has nothing to wait for beyond a short gap. A backend whose activity is seen needs
   * no gap: its round goes out once it is idle and an I/O turn brought nothing more.
   */
  readonly quietMs?: number | QuietGapOf | undefined;
  /** Relay events after this sequence number. */
  readonly since: number;
  /**
   * After how long (from the start of the wait) the call may become a task: if by then it has neither
   * ended nor asked for input, the round ends with `promote`. Input that arrives first still makes an
   * input round (MRTR exchanges before a task's creation finish synchronously).
   */
  readonly promoteAfterMs?: number | undefined;
}

/** The quiet gap (ms) for a call whose operation asks for things together or not. */
export type QuietGapOf = (asksTogether: boolean) => number;

export type RoundEnd =
  { kind: 'input'; pending: PendingInput[]; seq: number } | { kind: 'done'; outcome: CallOutcome; seq: number } | { kind: 'promote'; seq: number };

const LEVELS = LoggingLevelSchema.options;

/** While the backend is at work, how often its activity is looked at again (besides on each change of the call). */
const BUSY_RECHECK_MS = 1;
/** While more requests are expected (`Call.waveExpectation`), how often that is looked at again (besides on each change of the call). */
const MORE_RECHECK_MS = 5;

/** Resolves with the round's end; rejects when `view.signal` aborts. */
export async function waitForRound(call: Call, view: RoundView): Promise<RoundEnd> {
  let seq = view.since;
  const promoteAt = view.promoteAfterMs !== undefined ? systemClock.now() + view.promoteAfterMs : undefined;
  // Asked once per round, and again while the operation is not known to ask together: a request of
  // this round may teach it that (the round then waits as one that does).
  let gapMs: number | undefined;
  let together = false;
  const gap = (): number => {
    if (gapMs !== undefined && (together || typeof view.quietMs !== 'function')) return gapMs;
    // As many came as its operation's calls asked together in this wave: nothing more to wait for than one that asks alone.
    together = call.asksTogether && call.waveExpectation !== 'met';
    gapMs = Math.min(typeof view.quietMs === 'function' ? view.quietMs(together) : (view.quietMs ?? 0), view.coalesceMs);
    return gapMs;
  };
  /** When this wait first saw input outstanding: the window's start. */
  let windowFrom: number | undefined;
  /** The requests counted so far, and since when (performance.now(): sub-millisecond) no other came. */
  let asked = -1;
  let askedAt = 0;
  /** How many requests the call had made when an I/O turn was last let pass with the backend quiet. */
  let turnedAfter: number | undefined;
  for (;;) {
    seq = relayEvents(call, seq, view);
    if (call.outcome) return { kind: 'done', outcome: call.outcome, seq };
    const pending = call.pending;
    const now = systemClock.now();
    let wait: number | undefined;
    if (pending.length > 0) {
      windowFrom ??= Math.min(now, call.lastInputAt);
      const open = now - windowFrom;
      if (open >= view.coalesceMs) {
        // Short of what its operation's calls asked together in this wave: it does not always ask as many.
        if (call.waveExpectation === 'more') call.askedFewer();
        return { kind: 'input', pending, seq };
      }
      if (call.waveExpectation === 'more') {
        // Its operation's calls asked more together in this wave: the rest is coming, however late the
        // backend writes it at load (no gap measures that); coalesceMs bounds the wait.
        turnedAfter = undefined;
        // Looked at again every MORE_RECHECK_MS too: a proxy tool's call relays another's, whose changes
        // (a request refused there) do not wake it.
        await call.nextChange(view.signal, Math.min(MORE_RECHECK_MS, view.coalesceMs - open));
        continue;
      }
      const t = performance.now();
      if (call.inputsAsked !== asked) {
        asked = call.inputsAsked;
        // Credit what the millisecond stamp proves has passed since the request (a wait begun later).
        askedAt = t - Math.max(0, now - call.lastInputAt - 1);
      }
      // A backend whose activity can be seen (a stdio process) is quiet when it is idle: asleep, nothing
      // half-read, whatever the load; one that cannot be seen (HTTP) when no request came for the gap.
      const activity = call.backendActivity;
      const quiet = activity === 'busy' ? 'busy' : activity === 'idle' ? 0 : gap() - (t - askedAt);
      if (quiet === 'busy') turnedAfter = undefined;
      else if (quiet <= 0) {
        // Quiet, then one more I/O turn: what the backend wrote before it went quiet may be waiting,
        // unread, on its pipe or socket. Quiet through that turn too, the round goes out.
        if (turnedAfter === asked) {
          if (activity === 'idle' && pending.length === 1) call.wentOutOnce();
          return { kind: 'input', pending, seq };
        }
        turnedAfter = asked;
        await ioTurn(view.signal);
        continue;
      }
      wait = Math.min(quiet === 'busy' ? BUSY_RECHECK_MS : quiet, view.coalesceMs - open);
    } else if (promoteAt !== undefined) {
      if (now >= promoteAt) return { kind: 'promote', seq };
      wait = promoteAt - now;
    }
    await call.nextChange(view.signal, wait);
  }
}

/**
 * Resolves after an event-loop turn that polled for I/O (what is waiting on sockets and pipes is read
 * meanwhile): two check phases, with a poll phase between them whichever phase this runs in. Rejects
 * when `signal` aborts.
 */
async function ioTurn(signal: CancelSource): Promise<void> {
  for (let i = 0; i < 2; i++) {
    if (signal.aborted) throw abortReason(signal);
    await new Promise((resolve) => setImmediate(resolve));
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
