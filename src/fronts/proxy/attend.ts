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
import { GatewayError, WireCode, bareMessage } from '../../errors.js';
import { abortReason, linkedController, wakeOrAbort } from '../../util/abort.js';
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
}

export type AttendEnd = { kind: 'done'; outcome: CallOutcome } | { kind: 'timeout' } | { kind: 'needs-input' } | { kind: 'failed'; message: string };

export async function attend(opts: AttendOptions): Promise<AttendEnd> {
  const { tracker, work, channel, caps, signal } = opts;
  const forwards = new Map<string, { controller: AbortController; dispose(): void }>();
  const wakers = new Set<() => void>();
  const wake = (): void => {
    const all = [...wakers];
    wakers.clear();
    for (const w of all) w();
  };
  const started = Date.now();
  let paused = 0;
  let pausedSince: number | undefined;
  let seq = 0;
  tracker.attend(work, { caps });
  try {
    for (;;) {
      if (signal.aborted) throw abortReason(signal);
      const call = work.call;
      seq = relayProgress(call, seq, channel);
      const outcome = call.outcome;
      if (outcome) {
        const round = outcome.kind === 'done' && outcome.outcome.kind === 'input_required' ? outcome.outcome : undefined;
        if (!round || !opts.resume) return { kind: 'done', outcome };
        // A stateless backend's round: the client answers it here if it can, else the caller makes a task of it.
        const requests = Object.entries(round.inputRequests).map(([key, r]) => ({ key, ...(r as { method: string; params?: Record<string, unknown> }) }));
        if (requests.some((r) => missingCapabilityFor(r.method, r.params ?? {}, caps))) {
          if (opts.unanswerable === 'hand-over') return { kind: 'needs-input' };
          return { kind: 'failed', message: 'the server asked for input this client cannot give (it declared no such capability)' };
        }
        const askedAt = Date.now();
        let answers: Record<string, Record<string, unknown>>;
        try {
          answers = Object.fromEntries(
            await Promise.all(requests.map(async (r) => [r.key, await channel.requestInput(r.method, r.params ?? {}, signal)] as const)),
          );
        } catch (e) {
          if (signal.aborted) throw abortReason(signal);
          // A stateless backend cannot be told of a refusal: the call ends with it.
          return { kind: 'failed', message: `the client refused an input request: ${bareMessage(String((e as { message?: unknown }).message ?? e))}` };
        } finally {
          paused += Date.now() - askedAt; // waiting for the client does not count against the timeout
        }
        work.call = await opts.resume(answers, round.requestState);
        seq = 0;
        tracker.poke(work);
        continue;
      }
      const pending = new Set(call.pending.map((p) => p.key));
      for (const p of call.pending) {
        if (forwards.has(p.key)) continue;
        if (missingCapabilityFor(p.method, p.params, caps)) {
          // Nobody could answer it here: a task holds it for respond_to_*, or the backend is told at once.
          if (opts.unanswerable === 'hand-over') return { kind: 'needs-input' };
          call.refuse(p.key, new BackendRequestRefused(WireCode.MethodNotFound, `The client cannot answer ${p.method} (it declared no such capability)`));
          continue;
        }
        const leg = linkedController(signal);
        forwards.set(p.key, leg);
        work.forwarded.add(p.key);
        channel
          .requestInput(p.method, p.params, leg.controller.signal)
          .then(
            (answer) => void call.answer({ [p.key]: answer }),
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
            forwards.delete(p.key);
            work.forwarded.delete(p.key);
            leg.dispose();
            tracker.poke(work);
            wake();
          });
      }
      // What the backend withdrew is withdrawn from the client.
      for (const [key, leg] of forwards) if (!pending.has(key)) leg.controller.abort(WITHDRAWN);
      const now = Date.now();
      if (forwards.size > 0) pausedSince ??= now;
      else if (pausedSince !== undefined) {
        paused += now - pausedSince;
        pausedSince = undefined;
      }
      let waitMs: number | undefined;
      if (opts.timeoutMs !== undefined && forwards.size === 0) {
        const left = started + opts.timeoutMs + paused - now;
        if (left <= 0) return { kind: 'timeout' };
        waitMs = left;
      }
      await changeOrTimeout(call, wakers, waitMs, signal);
    }
  } finally {
    for (const leg of forwards.values()) leg.controller.abort(WITHDRAWN);
    tracker.attend(work, undefined);
  }
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
