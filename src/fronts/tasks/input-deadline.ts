/**
 * The deadline of a task's wait for its client's answer: a legacy backend's request for input holds
 * that backend's session (a stdio process) as a parked call's does, so it is bounded as a parked
 * call is, by its server's `parkTimeoutMs`, not by the task's whole ttl. Each wait is timed from
 * its start (`Call.waitingSince`): an answer, or part of one, ends it, and what the call waits for
 * after that is timed again; a request that comes while others wait joins their wait (a backend that
 * keeps asking is not given more time). Past the deadline the call is ended as failed
 * (`input_timeout`): the backend hears of it, and its session is free for other work.
 */
import type { Call } from '../../core/calls/call.js';
import { GatewayError } from '../../errors.js';
import type { CancelSource } from '../../util/lifeline.js';
import type { Clock, ClockTimer } from '../../util/clock.js';

/**
 * Ends `call` (failed, `input_timeout`) once it has waited `ms` for its client's answer, until the
 * call ends or `signal` aborts (the task was forgotten). Never rejects.
 */
export async function boundInputWaits(call: Call, ms: number, clock: Clock, signal: CancelSource): Promise<void> {
  const timedOut = new GatewayError('input_timeout', `${Math.round(ms / 100) / 10} s`);
  let timer: ClockTimer | undefined;
  let wait: number | undefined;
  try {
    while (!signal.aborted && !call.done) {
      const now = call.waitingSince();
      if (now !== wait) {
        timer?.cancel();
        timer = undefined;
        wait = now;
        if (now !== undefined) timer = clock.schedule(() => call.reclaim(timedOut), ms);
      }
      await call.nextChange(signal);
    }
  } catch {
    // The task was forgotten: nothing is timed any more.
  } finally {
    timer?.cancel();
  }
}
