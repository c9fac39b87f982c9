/**
 * Homes on Redis: `home:<key>` names the instance, renewed on every use for `ttlMs`; the claim is one
 * script that reads the owner's heartbeat and draining mark in the same step. This instance remembers
 * the homes it holds: while Redis is away it still answers for them (their proxy-tools state is here),
 * and it writes them again when Redis is back (`restore`).
 */
import type { Homes } from '../homes.js';
import { isUnavailable, type RedisConnection } from './connection.js';
import { LUA_ALIVE, type Instances } from './instances.js';

/**
 * KEYS: home, heartbeats, draining set; ARGV: claimant ('' for none), ttl ms, the heartbeat grace ms (a
 * home whose heartbeat only lapsed stays where its state is). The home, or false.
 */
const HOME_OF = `${LUA_ALIVE}
local cur = redis.call('GET', KEYS[1])
if cur and standing(KEYS[2], cur, ARGV[3]) and redis.call('SISMEMBER', KEYS[3], cur) == 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return cur
end
if ARGV[1] == '' then return false end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]`;

export class RedisHomes implements Homes {
  readonly #redis: RedisConnection;
  readonly #instances: Instances;
  readonly #instanceId: string;
  readonly #ttlMs: number;
  /** The keys whose home this instance is, and when that lapses unused (ms, this process's clock). */
  readonly #mine = new Map<string, number>();

  constructor(redis: RedisConnection, instances: Instances, instanceId: string, ttlMs: number) {
    this.#redis = redis;
    this.#instances = instances;
    this.#instanceId = instanceId;
    this.#ttlMs = Math.max(1, Math.ceil(ttlMs));
  }

  /** Throws `cluster_unavailable` while Redis is away, but for a home this instance holds. */
  async homeOf(key: string, claimant: string | undefined): Promise<string | undefined> {
    let home: unknown;
    try {
      home = await this.#redis.lookup((c) =>
        c.eval(HOME_OF, {
          keys: [this.#redis.key('home', key), this.#instances.key, this.#instances.drainingKey],
          arguments: [claimant ?? '', String(this.#ttlMs), String(this.#instances.ttlMs)],
        }),
      );
    } catch (e) {
      if (!isUnavailable(e) || (this.#mine.get(key) ?? 0) <= Date.now()) throw e;
      home = this.#instanceId;
    }
    if (home === this.#instanceId) this.#mine.set(key, Date.now() + this.#ttlMs);
    else this.#mine.delete(key);
    return typeof home === 'string' ? home : undefined;
  }

  /** Writes the homes this instance holds again (unless another instance took one meanwhile); how many. */
  async restore(): Promise<number> {
    const now = Date.now();
    let n = 0;
    for (const [key, until] of this.#mine) {
      if (until <= now) {
        this.#mine.delete(key);
        continue;
      }
      await this.#redis.run((c) => c.set(this.#redis.key('home', key), this.#instanceId, { condition: 'NX', expiration: { type: 'PX', value: until - now } }));
      n++;
    }
    return n;
  }
}
