/**
 * The signal a backend session gives the v1 SDK's `Protocol.request` for one request (issue 30: a
 * parked call holds one per backend request in flight). The SDK adds an abort listener it never
 * removes, and aborting later sends `notifications/cancelled` for a request long answered: so the
 * request gets a signal of its own, cut off from the caller's once the request is over (`dispose`).
 *
 * A real AbortController linked to the caller's signal cost about 1 KiB per request (its EventTarget,
 * two maps, a hidden class of its own, the link's closures). This is the part of AbortSignal the SDK
 * reads (`aborted`, `reason`, `throwIfAborted`, one `abort` listener), linked to the caller's signal
 * by itself as the listener object (`handleEvent`), with no closure.
 */

type AbortListener = (this: unknown, event: Event) => void;

export class RequestSignal {
  aborted = false;
  reason: unknown = undefined;
  #parent: AbortSignal | undefined;
  #listener: AbortListener | undefined;

  /** Follows `parent` until `dispose()`; aborted at once when it already is. */
  constructor(parent: AbortSignal) {
    if (parent.aborted) {
      this.aborted = true;
      this.reason = parent.reason;
      return;
    }
    this.#parent = parent;
    parent.addEventListener('abort', this, { once: true });
  }

  /** As an AbortSignal, for the SDK's request options (what it uses of one is above). */
  get signal(): AbortSignal {
    return this as unknown as AbortSignal;
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Keeps the one listener the SDK adds (it never removes it). */
  addEventListener(type: string, listener: AbortListener): void {
    if (type === 'abort') this.#listener = listener;
  }

  removeEventListener(type: string, listener: AbortListener): void {
    if (type === 'abort' && this.#listener === listener) this.#listener = undefined;
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    const parent = this.#parent;
    this.#parent = undefined;
    this.abort(parent?.reason);
  }

  /** Aborts the request (once): its listener runs with the reason. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.call(this, new Event('abort'));
  }

  /** The request is over: lets go of the caller's signal and of the SDK's listener. */
  dispose(): void {
    this.#parent?.removeEventListener('abort', this);
    this.#parent = undefined;
    this.#listener = undefined;
  }
}
