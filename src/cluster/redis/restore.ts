/**
 * Writing this instance's share of the cluster state again when Redis comes back (empty, as a
 * cache-style Redis restarts, or not): the directory entries of its live calls, its homes, its quota
 * units, its tasks, and last its own record (heartbeat, URL, draining mark). Other instances read a
 * live record as "everything it holds is written", so the record goes last, and until then lookups on
 * this instance wait (bounded) instead of answering "nothing there": a call that is still parked is
 * never reported gone because Redis restarted. Then lookups wait, bounded, for the instances that were
 * live before to be back as well.
 */
import type { Logger } from '../../log.js';
import { MAX_RECONNECT_DELAY_MS, causeOf, type RedisConnection } from './connection.js';
import type { Instances } from './instances.js';
import type { Restoring } from './seams.js';

/** One part of what this instance holds: writes it again, and says how many things it wrote. */
export type RestoreStep = () => Promise<number>;

/** How soon a write that failed while the connection stayed up (a command past its deadline) is made good. */
const DIRTY_DELAY_MS = 250;

export class Restorer implements Restoring {
  readonly #redis: RedisConnection;
  readonly #instances: Instances;
  readonly #log: Logger;
  readonly #steps = new Map<string, RestoreStep>();
  #running: Promise<void> | undefined;
  /** Set when something failed to be written during a restore or since: run again. */
  #again = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #closing = new AbortController();

  constructor(redis: RedisConnection, instances: Instances, log: Logger) {
    this.#redis = redis;
    this.#instances = instances;
    this.#log = log;
    redis.onRestored(() => this.#start());
  }

  /** Adds a part of what this instance holds (`what` names it in the log line). */
  add(what: string, step: RestoreStep): void {
    this.#steps.set(what, step);
  }

  /** How long lookups may wait for the instances that were live before to be back. */
  get #peerBoundMs(): number {
    return this.#instances.ttlMs + MAX_RECONNECT_DELAY_MS + 500;
  }

  dirty(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    // While the connection is down its return starts a restore anyway.
    if (!this.#redis.available || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#redis.available) this.#start();
    }, DIRTY_DELAY_MS);
    this.#timer.unref?.();
  }

  /** Resolves when no restore is under way. */
  async settled(): Promise<void> {
    await this.#running;
  }

  close(): void {
    this.#closed = true;
    this.#closing.abort();
    clearTimeout(this.#timer);
  }

  #start(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    // No beat until what this instance holds is written (its record goes last).
    this.#instances.hold();
    const running = this.#restore().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.dirty();
      }
    });
    this.#running = running;
    // Lookups wait for it; it settles on its own (every command has a deadline, the peer wait a bound).
    this.#redis.hold(running);
  }

  async #restore(): Promise<void> {
    const started = Date.now();
    const written: Record<string, number> = {};
    const steps = [...this.#steps];
    const results = await Promise.allSettled(steps.map(([, step]) => step()));
    let failed = false;
    results.forEach((r, i) => {
      const what = steps[i]![0];
      if (r.status === 'fulfilled') written[what] = r.value;
      else {
        failed = true;
        this.#log.warn({ what, err: causeOf(r.reason) }, 'redis is back, but writing again what this instance holds failed; tried again');
      }
    });
    try {
      await this.#instances.rejoin();
    } catch (e) {
      // Redis went away again: its return starts over; else try again shortly.
      this.#log.warn({ err: causeOf(e) }, 'redis is back, but this instance could not write its record again; tried again');
      this.#again = true;
      return;
    }
    if (failed) this.#again = true;
    const missing = await this.#instances.awaitPeers(this.#peerBoundMs, this.#closing.signal);
    this.#log.info(
      { ...written, ms: Date.now() - started, ...(missing.length > 0 ? { missingInstances: missing } : {}) },
      'redis is back: what this instance holds was written again',
    );
  }
}
