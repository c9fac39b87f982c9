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

/** The least time lookups wait after Redis came back for the instances that were live before. */
const MIN_PEER_WAIT_MS = 4_000;

/** Beyond the wait for the others: time for this instance's own re-write (several commands, each with its deadline). */
const RETURN_SLACK_MS = 4_000;

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
  /** Set when the connection came back (Redis may be empty): the next run writes this instance's record too, last. */
  #returned = false;
  /** Lets lookups go on: once a return's re-write is done (and the others are back), or after a bound. */
  #releaseLookups: (() => void) | undefined;

  constructor(redis: RedisConnection, instances: Instances, log: Logger) {
    this.#redis = redis;
    this.#instances = instances;
    this.#log = log;
    redis.onRestored(() => this.#onReturn());
  }

  /**
   * The connection is back: at once (a re-write under way or not), no heartbeat and no lookup until
   * what this instance holds is written again and the others are back, or a bound passed.
   */
  #onReturn(): void {
    if (this.#closed) return;
    this.#returned = true;
    this.#instances.hold();
    if (!this.#releaseLookups) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const bound = setTimeout(() => this.#release(), this.#peerBoundMs + RETURN_SLACK_MS);
      bound.unref?.();
      this.#releaseLookups = () => {
        clearTimeout(bound);
        release();
      };
      this.#redis.hold(released);
    }
    this.#start();
  }

  #release(): void {
    const release = this.#releaseLookups;
    this.#releaseLookups = undefined;
    release?.();
  }

  /** Adds a part of what this instance holds (`what` names it in the log line). */
  add(what: string, step: RestoreStep): void {
    this.#steps.set(what, step);
  }

  /**
   * How long lookups may wait for the instances that were live before to be back: each reconnects
   * within `MAX_RECONNECT_DELAY_MS` of Redis answering, then writes what it holds; a few seconds at
   * least, however short the heartbeat, for a loaded machine.
   */
  get #peerBoundMs(): number {
    return Math.max(this.#instances.ttlMs, MIN_PEER_WAIT_MS) + MAX_RECONNECT_DELAY_MS;
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
    this.#release();
  }

  #start(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    const returned = this.#returned;
    const running = (returned ? this.#afterReturn() : this.#makeGood()).finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        // Redis came back while writes were being made good: the return's re-write starts now.
        if (!returned && this.#returned) this.#start();
        else this.dirty();
      }
    });
    this.#running = running;
  }

  /** Runs every step; what each wrote, and whether one failed (it is tried again). */
  async #runSteps(): Promise<{ written: Record<string, number>; failed: boolean }> {
    const written: Record<string, number> = {};
    const steps = [...this.#steps];
    const results = await Promise.allSettled(steps.map(([, step]) => step()));
    let failed = false;
    results.forEach((r, i) => {
      const what = steps[i]![0];
      if (r.status === 'fulfilled') written[what] = r.value;
      else {
        failed = true;
        this.#log.warn({ what, err: causeOf(r.reason) }, 'writing again what this instance holds failed; tried again');
      }
    });
    if (failed) this.#again = true;
    return { written, failed };
  }

  /** Writes that failed while the connection stayed up (past their deadline) are made good: nothing else changes. */
  async #makeGood(): Promise<void> {
    const { written } = await this.#runSteps();
    this.#log.debug(written, 'writes that failed were made good');
  }

  /** Redis is back (maybe empty): what this instance holds, then its record, then the others' records. */
  async #afterReturn(): Promise<void> {
    const started = Date.now();
    const { written } = await this.#runSteps();
    if (!this.#redis.available) return; // away again: its return starts over
    try {
      await this.#instances.rejoin();
    } catch (e) {
      this.#log.warn({ err: causeOf(e) }, 'redis is back, but this instance could not write its record again; tried again');
      this.#again = true;
      return;
    }
    this.#returned = false;
    const missing = await this.#instances.awaitPeers(this.#peerBoundMs, this.#closing.signal);
    this.#release();
    this.#log.info(
      { ...written, ms: Date.now() - started, ...(missing.length > 0 ? { missingInstances: missing } : {}) },
      'redis is back: what this instance holds was written again',
    );
  }
}
