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

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
};
