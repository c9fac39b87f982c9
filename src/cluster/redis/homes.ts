/**
 * Homes on Redis: `home:<key>` names the instance, renewed on every use for `ttlMs`; the claim is one
 * script that reads the owner's heartbeat and draining mark in the same step.
 */
import type { Homes } from '../homes.js';
import type { RedisConnection } from './connection.js';
import { LUA_ALIVE, type Instances } from './instances.js';

/** KEYS: home, heartbeats, draining set; ARGV: claimant ('' for none), ttl ms. The home, or false. */
const HOME_OF = `${LUA_ALIVE}
local cur = redis.call('GET', KEYS[1])
if cur and alive(KEYS[2], cur) and redis.call('SISMEMBER', KEYS[3], cur) == 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return cur
end
if ARGV[1] == '' then return false end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]`;

export class RedisHomes implements Homes {
  readonly #redis: RedisConnection;
  readonly #instances: Instances;
  readonly #ttlMs: number;

  constructor(redis: RedisConnection, instances: Instances, ttlMs: number) {
    this.#redis = redis;
    this.#instances = instances;
    this.#ttlMs = ttlMs;
  }

  async homeOf(key: string, claimant: string | undefined): Promise<string | undefined> {
    const home = await this.#redis.client.eval(HOME_OF, {
      keys: [this.#redis.key('home', key), this.#instances.key, this.#instances.drainingKey],
      arguments: [claimant ?? '', String(Math.max(1, Math.ceil(this.#ttlMs)))],
    });
    return typeof home === 'string' ? home : undefined;
  }
}
