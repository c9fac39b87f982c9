/**
 * Single-use nonces on Redis: `nonce:<value>` set with `SET NX PX ttl`, one atomic step, so exactly one
 * of any number of instances that see the same nonce accepts it. A command that fails (Redis away) or
 * takes longer than `deadlineMs` rejects: the caller refuses rather than accepts.
 */
import type { Nonces } from '../nonces.js';
import type { RedisConnection } from './connection.js';

/** How long one check may wait for Redis (a frozen Redis must not hold a request for long). */
const DEADLINE_MS = 2_000;

export class RedisNonces implements Nonces {
  readonly #redis: RedisConnection;
  readonly #deadlineMs: number;

  constructor(redis: RedisConnection, deadlineMs = DEADLINE_MS) {
    this.#redis = redis;
    this.#deadlineMs = deadlineMs;
  }

  async accept(nonce: string, ttlMs: number): Promise<boolean> {
    const client = this.#redis.client.withAbortSignal(AbortSignal.timeout(this.#deadlineMs));
    const set = await client.set(this.#redis.key('nonce', nonce), '1', {
      condition: 'NX',
      expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) },
    });
    return set === 'OK';
  }
}
