/**
 * A scope's events (seed 000, category 1): ULID ids in arrival order, delivered exactly once through
 * tool responses (`takeNew` moves the delivery cursor) and woken waiters for `await_activity`. Bounded:
 * when full the oldest go, and the count of evicted events is reported to `onEvict` (the
 * `event_store_eviction` log line); events evicted before delivery are counted in `missed`. An event
 * may supersede an undelivered one of the same key (a call's progress: the newest is kept).
 */
import { monotonicIds } from '../../util/ids.js';
import { wakeOrAbort } from '../../util/abort.js';

export type ProxyEventType =
  | 'notification'
  | 'elicitation_request'
  | 'elicitation_expired'
  | 'sampling_request'
  | 'sampling_expired'
  | 'task_created'
  | 'task_completed'
  | 'task_failed'
  | 'task_cancelled'
  | 'task_expired'
  | 'server_connected'
  | 'server_disconnected'
  | 'server_reconnected'
  | 'server_added'
  | 'server_removed';

export interface ProxyEvent {
  readonly id: string;
  readonly type: ProxyEventType;
  readonly server: string;
  readonly data: unknown;
  /** ISO 8601. */
  readonly createdAt: string;
}

export class ScopeEvents {
  readonly #max: number;
  readonly #onEvict: (count: number) => void;
  readonly #events: ProxyEvent[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #ids = monotonicIds();
  /** The `replaces` key events were added with. */
  readonly #keys = new WeakMap<ProxyEvent, string>();
  /** Index in #events of the first undelivered event. */
  #cursor = 0;
  #missed = 0;

  constructor(max: number, onEvict: (count: number) => void = () => undefined) {
    this.#max = Math.max(1, max);
    this.#onEvict = onEvict;
  }

  /**
   * Adds an event. With `replaces`, an undelivered event added with the same key goes (it is
   * superseded, not lost: a call's progress, of which the newest says all).
   */
  add(type: ProxyEventType, server: string, data: unknown, now = Date.now(), replaces?: string): ProxyEvent {
    const event: ProxyEvent = { id: this.#ids(), type, server, data, createdAt: new Date(now).toISOString() };
    if (replaces !== undefined) {
      const old = this.#events.findIndex((e, i) => i >= this.#cursor && this.#keys.get(e) === replaces);
      if (old >= 0) this.#events.splice(old, 1);
      this.#keys.set(event, replaces);
    }
    this.#events.push(event);
    if (this.#events.length > this.#max) {
      const evicted = this.#events.length - this.#max;
      this.#events.splice(0, evicted);
      const undelivered = Math.max(0, evicted - this.#cursor);
      this.#missed += undelivered;
      this.#cursor = Math.max(0, this.#cursor - evicted);
      this.#onEvict(evicted);
    }
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
    return event;
  }

  /** True when events wait for delivery. */
  get hasNew(): boolean {
    return this.#cursor < this.#events.length || this.#missed > 0;
  }

  /** The undelivered events, oldest first, now marked delivered; `missed` counts those evicted undelivered. */
  takeNew(): { events: ProxyEvent[]; missed: number } {
    const events = this.#events.slice(this.#cursor);
    this.#cursor = this.#events.length;
    const missed = this.#missed;
    this.#missed = 0;
    return { events, missed };
  }

  /** Events after `id` (delivered or not; for a reader with its own cursor), oldest first. */
  after(id: string | undefined): ProxyEvent[] {
    if (id === undefined) return [...this.#events];
    return this.#events.filter((e) => e.id > id);
  }

  /** Resolves at the next event; rejects when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    return wakeOrAbort(this.#waiters, signal);
  }
}
