/**
 * AbortSignal helpers: sleeping, linking and racing with cleanup of every listener and timer.
 */
import type { CancelSource } from './lifeline.js';

/** The reason carried by a signal, as an Error. */
export function abortReason(signal: { readonly reason: unknown }): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error(typeof r === 'string' ? r : 'aborted');
}

/**
 * Resolves after `ms`, or rejects with the signal's reason when it aborts first.
 * The timer is unref'd (unless `hold`) and cleared on abort; the abort listener is removed on settle.
 * `hold`: the timer keeps the process alive, for a bounded step of work someone awaits (ending a
 * backend's processes during close()): an unref'd one would let an otherwise idle process exit, with
 * code 0, in the middle of it.
 */
export function sleep(ms: number, signal?: AbortSignal, hold = false): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (!hold) timer.unref?.();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Where a signal made by `anySignal` keeps its sources. */
const SOURCES = Symbol('sources');

/**
 * `AbortSignal.any(signals)`, holding its sources for as long as it lives. Node (20.20, nodejs/node#57736)
 * lets a composite refer to its sources weakly, and a timer made by `AbortSignal.timeout` refers to its
 * signal weakly too: a timeout that only a composite refers to is collected at the next GC and never
 * fires, so the composite never aborts (a wait with a deadline waits on; a fetch never times out).
 * Seen in CI: a list's 3 s deadline, made so, lasted 22 s, until the connect it waited for gave up.
 * The composite itself is kept while it has an abort listener (Node's own rule), and with it now its
 * sources; once nobody listens, all of them are collected and the timer is cleared with them.
 */
export function anySignal(signals: readonly AbortSignal[]): AbortSignal {
  // eslint-disable-next-line no-restricted-properties -- the one place that may call it
  const any = AbortSignal.any(signals as AbortSignal[]);
  (any as AbortSignal & { [SOURCES]?: readonly AbortSignal[] })[SOURCES] = signals;
  return any;
}

/**
 * Waits for `promise` or the signal, whichever settles first. The listener is removed on settle;
 * the loser is not cancelled here — callers own the work behind `promise` and cancel it themselves.
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined); // lost already: its later failure is nobody's to handle (never unhandled)
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * A controller that aborts when any parent signal aborts. `dispose()` detaches it from the parents
 * (call it when the child's work is done so long-lived parents do not collect listeners).
 */
export function linkedController(...parents: (CancelSource | undefined)[]): {
  controller: AbortController;
  dispose(): void;
} {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  for (const parent of parents) {
    if (!parent) continue;
    if (parent.aborted) {
      controller.abort(parent.reason);
      break;
    }
    const onAbort = (): void => controller.abort(parent.reason);
    parent.addEventListener('abort', onAbort, { once: true });
    cleanups.push(() => parent.removeEventListener('abort', onAbort));
  }
  return {
    controller,
    dispose() {
      for (const c of cleanups.splice(0)) c();
    },
  };
}

/**
 * Runs `work` with a signal that aborts when `parent` does, or once `ms` have passed (then with the
 * error `expired()` makes, and `work`'s failure is that error unless `parent` aborted first). The
 * timer is cleared and the link to `parent` dropped when `work` settles.
 */
export async function withinDeadline<T>(parent: AbortSignal, ms: number, expired: () => Error, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const link = linkedController(parent);
  let late: Error | undefined;
  const timer = setTimeout(
    () => {
      late = expired();
      link.controller.abort(late);
    },
    Math.max(1, ms),
  );
  timer.unref?.();
  try {
    return await work(link.controller.signal);
  } catch (e) {
    if (late && !parent.aborted) throw late;
    throw e;
  } finally {
    clearTimeout(timer);
    link.dispose();
  }
}

/**
 * Waits until the owner calls the waker this adds to `waiters` (and removes it), or rejects with the
 * signal's reason when it aborts first (the waker is then taken out of `waiters`, and `onEmpty` told
 * when that left the set empty: an owner that makes its set lazily can let it go). With `withinMs`,
 * it also resolves once that much time has passed (the waker taken out the same way): one timer, no
 * second signal to link (an MRTR round waits this way many times while a backend is at work).
 */
export function wakeOrAbort(waiters: Set<() => void>, signal: CancelSource, onEmpty?: () => void, withinMs?: number): Promise<void> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const leave = (): void => {
      waiters.delete(wake);
      if (waiters.size === 0) onEmpty?.();
    };
    const wake = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = (): void => {
      clearTimeout(timer);
      leave();
      reject(abortReason(signal));
    };
    waiters.add(wake);
    signal.addEventListener('abort', onAbort, { once: true });
    if (withinMs !== undefined) {
      timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        leave();
        resolve();
      }, withinMs);
      timer.unref?.();
    }
  });
}

/**
 * Resolves once `count()` is 0, looked at every `pollMs`, or after `withinMs` whatever it is then (what
 * is still counted is given up on): requests whose calls were just cancelled, their answers on their way.
 */
export async function untilNone(count: () => number, withinMs: number, pollMs: number): Promise<void> {
  const deadline = AbortSignal.timeout(withinMs);
  try {
    while (count() > 0) await sleep(pollMs, deadline);
  } catch {
    // not all in time: the caller goes on anyway
  }
}
