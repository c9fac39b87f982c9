/**
 * Single-use nonces on Redis: `nonce:<value>` set with `SET NX PX ttl`, one atomic step, so exactly one
 * of any number of instances that see the same nonce accepts it. A command that fails (Redis away) or
 * takes longer than the connection's deadline rejects: the caller refuses rather than accepts.
 */
import type { Nonces } from '../nonces.js';
import type { RedisConnection } from './connection.js';

export class RedisNonces implements Nonces {
  readonly #redis: RedisConnection;

  constructor(redis: RedisConnection) {
    this.#redis = redis;
  }

  /** Through the connection's `run`: its deadline (2 s), and `cluster_unavailable` when Redis cannot answer. */
  async accept(nonce: string, ttlMs: number): Promise<boolean> {
    const set = await this.#redis.run((c) =>
      c.set(this.#redis.key('nonce', nonce), '1', { condition: 'NX', expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) } }),
    );
    return set === 'OK';
  }
}
