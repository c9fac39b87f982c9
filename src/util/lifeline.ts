/**
 * A lifeline: the part of an `AbortSignal` that work listens to in order to stop when its owner ends
 * (`CancelSource`: ended or not, why, listeners told once), without Node's `AbortSignal` (issue 30).
 * Making one, adding and removing a listener and aborting it with an event cost a pass-through call
 * several percent of the gateway's CPU each time; a call's backend request listened to one the call
 * made for nothing else. An owner keeps a lifeline for its hot path and makes a real AbortSignal only
 * when something asks for one (an API that takes a signal), aborting both when it ends.
 */

/** A listener: a function, or an object whose `handleEvent` runs (both as an AbortSignal takes them). */
export type AbortListener = (() => void) | { handleEvent(): void };

/** What listens to an end needs of it; an AbortSignal is one. */
export interface CancelSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

export class Lifeline implements CancelSource {
  aborted = false;
  reason: unknown = undefined;
  /** One listener (the common case: the backend's request in flight), or several. */
  #listeners: AbortListener | AbortListener[] | undefined;
  /** The same end as an AbortSignal, once something asked for one (`signal`). */
  #controller: AbortController | undefined;

  /** The lifeline as an AbortSignal (for an API that takes one): made when first asked for, aborted with it (at once if it has ended). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.aborted) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }

  /**
   * `listener` runs once when the lifeline ends; as with an AbortSignal, never when it already has, and
   * a listener already on it is not added twice.
   */
  addEventListener(_type: 'abort', listener: AbortListener, _options?: { once?: boolean }): void {
    if (this.aborted) return;
    const held = this.#listeners;
    if (held === undefined) this.#listeners = listener;
    else if (Array.isArray(held)) {
      if (!held.includes(listener)) held.push(listener);
    } else if (held !== listener) this.#listeners = [held, listener];
  }

  /** Takes `listener` off (also while the end is being told: it then does not run). */
  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const held = this.#listeners;
    if (held === listener) this.#listeners = undefined;
    else if (Array.isArray(held)) {
      const i = held.indexOf(listener);
      if (i >= 0) held.splice(i, 1);
    }
  }

  /**
   * Ends the lifeline (once): its AbortSignal, if made, aborts; then each listener runs, in the order
   * they came. With no reason, the reason is an `AbortError`, as an AbortController gives. Unlike an
   * EventTarget, a listener that throws is not reported: the others still run.
   */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    this.#controller?.abort(this.reason);
    const held = this.#listeners;
    if (held === undefined) return;
    if (!Array.isArray(held)) {
      this.#listeners = undefined;
      tell(held);
      return;
    }
    // Told from a copy; one taken off by an earlier listener (from the live list) is skipped.
    for (const listener of [...held]) if (held.includes(listener)) tell(listener);
    this.#listeners = undefined;
  }
}

function tell(listener: AbortListener): void {
  try {
    if (typeof listener === 'function') listener();
    else listener.handleEvent();
  } catch {
    // one listener's failure must not keep the others from hearing of the end
  }
}

/** `source` as an AbortSignal: itself, or a lifeline's (made when first asked for). */
export function abortSignalOf(source: AbortSignal | Lifeline): AbortSignal {
  return source instanceof Lifeline ? source.signal : source;
}
