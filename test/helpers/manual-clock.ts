/** A clock that moves only when a test says so (the gateway's `Clock` seam), instead of sleeping. */
import type { Clock, ClockTimer } from '../../src/util/clock.js';

export class ManualClock implements Clock {
  #now: number;
  #timers: { at: number; fn: () => void; cancelled: boolean }[] = [];

  constructor(start = Date.now()) {
    this.#now = start;
  }

  now = (): number => this.#now;

  schedule(fn: () => void, ms: number): ClockTimer {
    const t = { at: this.#now + ms, fn, cancelled: false };
    this.#timers.push(t);
    return { cancel: () => void (t.cancelled = true) };
  }

  /** Moves time forward by `ms`, running every timer that falls due, in order. */
  advance(ms: number): void {
    this.#now += ms;
    const due = this.#timers.filter((t) => !t.cancelled && t.at <= this.#now).sort((a, b) => a.at - b.at);
    this.#timers = this.#timers.filter((t) => !t.cancelled && t.at > this.#now);
    for (const t of due) t.fn();
  }
}
