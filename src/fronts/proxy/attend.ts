/**
 * A proxy tool (`execute_tool`, `get_prompt`, `read_resource`) waiting on the backend call it started.
 *
 * The multi-round-trip style: an input request of that call that the client declared it can answer is
 * asked through the proxy tool's own call (`channel.requestInput`), so the client gets it exactly as it
 * would get the backend's own: an `input_required` round on `/mcp`, a real request on the legacy route.
 * The answer goes back into the backend call; a withdrawn request is withdrawn from the client; a
 * refusal reaches the backend's request. This is the core's translation, used once more, not a copy of
 * it. An input request the client cannot answer waits as a pending client action (`respond_to_*`).
 *
 * The wait ends with the call, or at `timeoutMs` (time spent waiting for the client's answers does not
 * count: the backend is waiting on the client then, not the other way round), when the caller makes
 * the call a task.
 */
import type { CallChannel } from '../../core/backend/port.js';
import { BackendRequestRefused, ClientRefusal } from '../../core/backend/port.js';
import type { Call, CallOutcome } from '../../core/calls/call.js';
import { missingCapabilityFor, type InputCapabilities } from '../../core/input-capabilities.js';
import { WireCode, bareMessage } from '../../errors.js';
import { abortReason, linkedController, wakeOrAbort } from '../../util/abort.js';
import { background, type BackgroundLog } from '../../util/background.js';
import { WITHDRAWN } from '../mrtr/parked-round.js';
import type { ContinueCall } from '../tasks/registry.js';
import type { Work } from './scope.js';
import type { WorkTracker } from './work.js';

export interface AttendOptions {
  readonly tracker: WorkTracker;
  readonly work: Work;
  /** The proxy tool's own call: where input requests are asked and progress goes. */
  readonly channel: CallChannel;
  /** What the proxy tool's client can be asked. */
  readonly caps: InputCapabilities;
  /** The proxy tool's call: aborted when its client goes away. */
  readonly signal: AbortSignal;
  /** When to give the wait up (undefined: never, until the call ends or the signal aborts). */
  readonly timeoutMs?: number | undefined;
  /** Carries a stateless (2026-07-28) backend's call on after its `input_required`. */
  readonly resume?: ContinueCall | undefined;
  /**
   * What becomes of an input request the client cannot answer: `hand-over` ends the wait at once (the
   * caller makes the call a task, whose request waits as a pending client action); `refuse` fails the
   * backend's request as a client without that capability would.
   */
  readonly unanswerable: 'hand-over' | 'refuse';
  /** Where a relay that failed unexpectedly is reported. */
  readonly log: BackgroundLog;
}

export type AttendEnd = { kind: 'done'; outcome: CallOutcome } | { kind: 'timeout' } | { kind: 'needs-input' } | { kind: 'failed'; message: string };

/** What one wait keeps between its turns. */
interface Attending {
  /** Input requests being asked of the client now: key → the leg that asks it. */
  readonly forwards: Map<string, { controller: AbortController; dispose(): void }>;
  /** Woken when a forwarded request settles. */
  readonly wakers: Set<() => void>;
  readonly started: number;
  /** Time spent waiting for the client's answers (it does not count against the timeout). */
  paused: number;
  pausedSince: number | undefined;
  /** The call's last event relayed. */
  seq: number;
}

/**
 * Waits on the work's call, turn by turn: relay its progress; when it ended, answer a stateless
 * backend's round (and go on with the call that carries it on) or return its outcome; else forward its
 * pending inputs to the client and wait for the next change, within the time left.
 */
export async function attend(opts: AttendOptions): Promise<AttendEnd> {
  const { tracker, work, signal } = opts;
  const state: Attending = { forwards: new Map(), wakers: new Set(), started: Date.now(), paused: 0, pausedSince: undefined, seq: 0 };
  tracker.attend(work, { caps: opts.caps });
  try {
    for (;;) {
      if (signal.aborted) throw abortReason(signal);
      const call = work.call;
      // The proxy tool's rounds wait as this call's operation asks and its backend works (its own name
      // and backend say nothing of either).
      opts.channel.relays?.(call);
      state.seq = relayProgress(call, state.seq, opts.channel);
      const outcome = call.outcome;
      if (outcome) {
        const round = outcome.kind === 'done' && outcome.outcome.kind === 'input_required' ? outcome.outcome : undefined;
        if (!round || !opts.resume) return { kind: 'done', outcome };
        const ended = await answerRound(opts, state, round, opts.resume);
        if (ended) return ended;
        continue;
      }
      if (forwardPending(opts, state, call) === 'needs-input') return { kind: 'needs-input' };
      const wait = timeLeft(opts, state);
      if (wait === 'timeout') return { kind: 'timeout' };
      await changeOrTimeout(call, state.wakers, wait, signal);
    }
  } finally {
    for (const leg of state.forwards.values()) leg.controller.abort(WITHDRAWN);
    opts.channel.relays?.(undefined);
    tracker.attend(work, undefined);
  }
}

/**
 * A stateless backend's round: the client answers it here if it can (the call that carries it on
 * replaces the work's call; undefined), else the caller makes a task of it, or it fails.
 */
async function answerRound(
  opts: AttendOptions,
  state: Attending,
  round: { readonly inputRequests: Record<string, unknown>; readonly requestState?: string | undefined },
  resume: ContinueCall,
): Promise<AttendEnd | undefined> {
  const { work, channel, caps, signal } = opts;
  const requests = Object.entries(round.inputRequests).map(([key, r]) => ({ key, ...(r as { method: string; params?: Record<string, unknown> }) }));
  if (requests.some((r) => missingCapabilityFor(r.method, r.params ?? {}, caps))) {
    if (opts.unanswerable === 'hand-over') return { kind: 'needs-input' };
    return { kind: 'failed', message: 'the server asked for input this client cannot give (it declared no such capability)' };
  }
  const askedAt = Date.now();
  let answers: Record<string, Record<string, unknown>>;
  try {
    answers = Object.fromEntries(await Promise.all(requests.map(async (r) => [r.key, await channel.requestInput(r.method, r.params ?? {}, signal)] as const)));
  } catch (e) {
    if (signal.aborted) throw abortReason(signal);
    // A stateless backend cannot be told of a refusal: the call ends with it.
    return { kind: 'failed', message: `the client refused an input request: ${bareMessage(String((e as { message?: unknown }).message ?? e))}` };
  } finally {
    state.paused += Date.now() - askedAt; // waiting for the client does not count against the timeout
  }
  work.call = await resume(answers, round.requestState);
  state.seq = 0;
  opts.tracker.poke(work);
  return undefined;
}

/**
 * Asks the client each pending input of `call` not asked yet, and withdraws from it what the backend
 * withdrew. One the client cannot answer is refused to the backend at once, or (`hand-over`) ends the
 * wait: `needs-input`.
 */
function forwardPending(opts: AttendOptions, state: Attending, call: Call): 'needs-input' | undefined {
  const pending = new Set(call.pending.map((p) => p.key));
  for (const p of call.pending) {
    if (state.forwards.has(p.key)) continue;
    if (missingCapabilityFor(p.method, p.params, opts.caps)) {
      // Nobody could answer it here: a task holds it for respond_to_*, or the backend is told at once.
      if (opts.unanswerable === 'hand-over') return 'needs-input';
      call.refuse(p.key, new BackendRequestRefused(WireCode.MethodNotFound, `The client cannot answer ${p.method} (it declared no such capability)`));
      continue;
    }
    forwardInput(opts, state, call, p);
  }
  // What the backend withdrew is withdrawn from the client.
  for (const [key, leg] of state.forwards) if (!pending.has(key)) leg.controller.abort(WITHDRAWN);
  return undefined;
}

/** Asks the client one input request; its answer or refusal goes back into the call, and the wait wakes. */
function forwardInput(opts: AttendOptions, state: Attending, call: Call, p: { key: string; method: string; params: Record<string, unknown> }): void {
  const { work, tracker } = opts;
  const leg = linkedController(opts.signal);
  state.forwards.set(p.key, leg);
  work.forwarded.add(p.key);
  const asked = opts.channel
    .requestInput(p.method, p.params, leg.controller.signal)
    .then(
      (answer) => {
        call.answer({ [p.key]: answer });
      },
      (e: unknown) => {
        if (leg.controller.signal.aborted) return;
        const { code, message, data } = (e ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
        const wire = typeof code === 'number' ? code : WireCode.InternalError;
        // The client's own error stays one (it counts for the sampling breaker); anything else is the gateway's.
        const Refusal = e instanceof ClientRefusal ? ClientRefusal : BackendRequestRefused;
        call.refuse(p.key, new Refusal(wire, String(message ?? 'refused'), data));
      },
    )
    .finally(() => {
      state.forwards.delete(p.key);
      work.forwarded.delete(p.key);
      leg.dispose();
      tracker.poke(work);
      const all = [...state.wakers];
      state.wakers.clear();
      for (const w of all) w();
    });
  // Its answer and its refusal are both handled above; what is left to fail (a waker that throws) is logged, never unhandled.
  background('relay an input request to the client', asked, opts.log);
}

/**
 * How long the next wait may last: undefined without a timeout or while the client is being asked
 * (that time is paused), `timeout` once the time is up.
 */
function timeLeft(opts: AttendOptions, state: Attending): number | undefined | 'timeout' {
  const now = Date.now();
  if (state.forwards.size > 0) state.pausedSince ??= now;
  else if (state.pausedSince !== undefined) {
    state.paused += now - state.pausedSince;
    state.pausedSince = undefined;
  }
  if (opts.timeoutMs === undefined || state.forwards.size > 0) return undefined;
  const left = state.started + opts.timeoutMs + state.paused - now;
  return left <= 0 ? 'timeout' : left;
}

/** Passes the call's progress on to the proxy tool's call; returns the new position. */
function relayProgress(call: Call, since: number, channel: CallChannel): number {
  for (const { event } of call.events(since).events) if (event.kind === 'progress') channel.progress(event.progress);
  return Math.max(since, call.lastEventSeq);
}

async function changeOrTimeout(call: Call, wakers: Set<() => void>, ms: number | undefined, signal: AbortSignal): Promise<void> {
  const link = linkedController(signal);
  const timer = ms !== undefined ? setTimeout(() => link.controller.abort(), ms) : undefined;
  timer?.unref?.();
  try {
    await Promise.race([call.nextChange(link.controller.signal), wakeOrAbort(wakers, link.controller.signal)]);
  } catch {
    if (signal.aborted) throw abortReason(signal);
  } finally {
    clearTimeout(timer);
    link.controller.abort();
    link.dispose();
  }
}
