/**
 * Session-level requests a legacy backend made outside any call (a `roots/list` right after
 * `initialize`, or on a shared session's GET stream), held for a call of the session's principal to
 * ask its client (`BackendSessionOptions.sessionRoots` 'defer'), and handed to the calls the session
 * serves. One that a call ends without answering (its client left, it expired) is held again for the
 * call after it, or asked at once of another call of the session in flight.
 */
import { toBackendError } from './backend-refusal.js';
import { BackendRequestRefused, CALL_ENDED, type CallChannel, type InputCancel } from './port.js';

/** A held request, and how the backend gets the answer. */
interface Held {
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly signal: InputCancel;
  resolve(v: Record<string, unknown>): void;
  reject(e: unknown): void;
}

/** What the holder needs of its session. */
export interface HeldRequestsSession {
  /** True once the session is closed: nothing is held again. */
  readonly closed: () => boolean;
  /** Another call of the session in flight than `run` (the latest), if any. */
  readonly otherThan: (run: CallChannel) => CallChannel | undefined;
}

export class HeldRequests {
  readonly #session: HeldRequestsSession;
  readonly #held: Held[] = [];
  /** By call id: the held requests handed to that call, settled (`askedFirst`). */
  readonly #handedTo = new Map<string, Promise<void>>();

  constructor(session: HeldRequestsSession) {
    this.#session = session;
  }

  /**
   * Holds the backend's request until a call asks it: `latest`, a call of the session in flight, at
   * once (one of them may be waiting for the answer); otherwise the next call bound. Its answer, or
   * the error the backend gets; dropped when the backend withdraws it (`signal`).
   */
  hold(method: string, params: Record<string, unknown>, signal: InputCancel, latest: CallChannel | undefined): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const entry: Held = { method, params, signal, resolve, reject };
      this.#held.push(entry);
      const drop = (): void => {
        const i = this.#held.indexOf(entry);
        if (i >= 0) this.#held.splice(i, 1);
      };
      signal.addEventListener('abort', drop, { once: true });
      if (latest) this.handTo(latest);
    });
  }

  /** Hands every request held so far to `run` (a call bound to the session, or in flight on it). */
  handTo(run: CallChannel): void {
    const asks: Promise<void>[] = [];
    for (const h of this.#held.splice(0)) {
      if (h.signal.aborted) continue;
      asks.push(
        run.requestInput(h.method, h.params, h.signal).then(h.resolve, (e: unknown) => {
          if (h.signal.aborted || !(e instanceof BackendRequestRefused) || e.message !== CALL_ENDED || this.#session.closed())
            return h.reject(toBackendError(e));
          this.#held.push(h);
          // Another call of the session in flight (a shared session) may be the one waiting for the answer: asked now.
          const other = this.#session.otherThan(run);
          if (other) this.handTo(other);
        }),
      );
    }
    if (asks.length)
      this.#handedTo.set(
        run.id,
        Promise.all(asks).then(() => undefined),
      );
  }

  /**
   * Settles once `run` has answered (or failed) the requests it was handed when bound, undefined when
   * it was handed none: its own request goes to the backend after them, so a server that asked for
   * roots at initialization has them before it serves the call. Taken once.
   */
  askedFirst(run: CallChannel): Promise<void> | undefined {
    const asked = this.#handedTo.get(run.id);
    this.#handedTo.delete(run.id);
    return asked;
  }

  /** `run` left the session. */
  forget(run: CallChannel): void {
    this.#handedTo.delete(run.id);
  }

  /** Fails every request still held with `error` (the session closed). */
  rejectAll(error: Error): void {
    for (const h of this.#held.splice(0)) h.reject(error);
  }
}
