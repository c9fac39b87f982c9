/**
 * The clock seam: time and timers that tests can move instead of sleeping. `systemClock` is the real
 * one (timers unref'd, so a pending expiry never keeps the process alive).
 */
export interface ClockTimer {
  cancel(): void;
}

export interface Clock {
  now(): number;
  /** Runs `fn` after `ms`; the returned handle cancels it. */
  schedule(fn: () => void, ms: number): ClockTimer;
}

/** A system timer's handle: one small object (a parked call holds one), no closure. */
class SystemTimer implements ClockTimer {
  readonly #timeout: ReturnType<typeof setTimeout>;

  constructor(fn: () => void, ms: number) {
    this.#timeout = setTimeout(fn, ms);
    this.#timeout.unref?.();
  }

  cancel(): void {
    clearTimeout(this.#timeout);
  }
}

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule: (fn, ms) => new SystemTimer(fn, ms),
};
