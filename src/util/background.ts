/**
 * Background work: the one way to start a promise nobody awaits. A rejected background promise is
 * logged once (with what it was doing) and never becomes an unhandled rejection, so no dependency that
 * goes away mid-work (Redis, a backend, a client's socket) can end the process through it.
 * `@typescript-eslint/no-floating-promises` with `ignoreVoid: false` makes this the only way.
 */

/** Where a failed background promise is reported: the gateway's logger fits. */
export interface BackgroundLog {
  warn(obj: object, msg?: string): void;
}

let failures = 0;

/** How many background promises have failed in this process (read by tests). */
export function backgroundFailures(): number {
  return failures;
}

/**
 * Runs `work` (a promise, or a function returning one; a function that throws counts as a failure)
 * without awaiting it. Its failure is logged at warn as `what` with the error's message, never rethrown.
 */
export function background(what: string, work: PromiseLike<unknown> | (() => PromiseLike<unknown>), log?: BackgroundLog): void {
  let promise: PromiseLike<unknown>;
  try {
    promise = typeof work === 'function' ? work() : work;
  } catch (error) {
    report(what, error, log);
    return;
  }
  Promise.resolve(promise).then(undefined, (error: unknown) => report(what, error, log));
}

function report(what: string, error: unknown, log: BackgroundLog | undefined): void {
  failures++;
  const message = error instanceof Error ? error.message : String(error);
  try {
    log?.warn({ what, err: message }, 'background work failed');
  } catch {
    // a logger that throws must not turn a logged failure into an unhandled one
  }
}
