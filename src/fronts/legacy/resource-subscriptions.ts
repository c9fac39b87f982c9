/**
 * Resource subscriptions of legacy client sessions (2025-11-25 `resources/subscribe`), relayed to the
 * backend that owns the resource: the first subscriber of a (backend, uri) makes the gateway subscribe
 * at that backend, the last one to leave unsubscribes it; a backend's `notifications/resources/updated`
 * goes to the sessions subscribed to that uri, and to no other session.
 */
import type { BackendPort } from '../../core/backend/port.js';
import type { EventBus } from '../../core/events.js';

export interface ResourceSubscriptionsDeps {
  /** The backend that owns `uri`. */
  readonly resolve: (uri: string) => Promise<BackendPort | undefined>;
  readonly events: EventBus;
  /** Deadline of one backend subscribe/unsubscribe. */
  readonly timeoutMs: number;
}

interface Watch {
  readonly backend: BackendPort;
  readonly uri: string;
  readonly listeners: Set<(uri: string) => void>;
  /** Settles once the backend acknowledged the subscription. */
  ready: Promise<void>;
}

export class ResourceSubscriptions {
  readonly #deps: ResourceSubscriptionsDeps;
  readonly #watches = new Map<string, Watch>();
  readonly #off: () => void;

  constructor(deps: ResourceSubscriptionsDeps) {
    this.#deps = deps;
    this.#off = deps.events.onResourceUpdated((uri, backend) => {
      for (const l of [...(this.#watches.get(`${backend}\u0000${uri}`)?.listeners ?? [])]) l(uri);
    });
  }

  /** Subscribes `listener` to `uri`; resolves with the function that ends this subscription. Throws what the backend throws. */
  async subscribe(uri: string, listener: (uri: string) => void): Promise<() => Promise<void>> {
    const backend = await this.#deps.resolve(uri);
    if (!backend) throw new Error(`Resource not found: ${uri}`);
    const key = `${backend.name}\u0000${uri}`;
    let watch = this.#watches.get(key);
    if (!watch) {
      const created: Watch = { backend, uri, listeners: new Set(), ready: Promise.resolve() };
      created.ready = backend.request('resources/subscribe', { uri }, AbortSignal.timeout(this.#deps.timeoutMs)).then(
        () => undefined,
        (e: unknown) => {
          if (this.#watches.get(key) === created && created.listeners.size === 0) this.#watches.delete(key);
          throw e;
        },
      );
      this.#watches.set(key, created);
      watch = created;
    }
    watch.listeners.add(listener);
    try {
      await watch.ready;
    } catch (e) {
      watch.listeners.delete(listener);
      if (watch.listeners.size === 0 && this.#watches.get(key) === watch) this.#watches.delete(key);
      throw e;
    }
    const w = watch;
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      w.listeners.delete(listener);
      if (w.listeners.size > 0 || this.#watches.get(key) !== w) return;
      this.#watches.delete(key);
      await w.backend.request('resources/unsubscribe', { uri }, AbortSignal.timeout(this.#deps.timeoutMs)).catch(() => undefined);
    };
  }

  close(): void {
    this.#off();
    this.#watches.clear();
  }
}
