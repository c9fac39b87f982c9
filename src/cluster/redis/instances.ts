/**
 * The live instances of a cluster: each instance keeps its member in a sorted set whose score is when
 * its heartbeat lapses (ms, Redis server time), renewed every `heartbeatMs`; an instance whose score is
 * in the past is dead, at once, whatever it held (no wait for a timeout). Its internal URL (where others
 * forward retries for its calls) sits in a hash beside it.
 */
import type { RedisConnection } from './connection.js';

export interface InstanceOptions {
  readonly instanceId: string;
  /** Where other instances reach this one (forwarded retries); optional until forwarding is used. */
  readonly internalUrl?: string | undefined;
  readonly heartbeatMs: number;
  /** How long a heartbeat counts; more than `heartbeatMs` (default 3×). */
  readonly ttlMs?: number | undefined;
  readonly onError?: (e: Error) => void;
}

/** Lua: `now`, in ms on the Redis server's clock (every instance reads the same clock). */
const LUA_NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Lua: `now`, and `alive(heartbeats, id)`: true while the heartbeat of `id` in the set `heartbeats` is current. */
export const LUA_ALIVE = `${LUA_NOW}
local function alive(heartbeats, id)
  local lapse = redis.call('ZSCORE', heartbeats, id)
  return lapse and tonumber(lapse) > now
end`;

/** Lua, after `now`: marks ARGV[1] alive until now + ARGV[2] in KEYS[1], and records its URL ARGV[3] in KEYS[2]. */
const MARK_ALIVE = `redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end`;

/** A heartbeat (and the dropping of members dead for a day). */
const BEAT = `${LUA_NOW}
${MARK_ALIVE}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 86400000)
return now`;

/**
 * The first beat: refused ('taken') while a live member of the same id has another URL (ARGV as BEAT;
 * KEYS[3] the draining set, left by a restarted instance).
 */
const JOIN = `${LUA_ALIVE}
if alive(KEYS[1], ARGV[1]) and (redis.call('HGET', KEYS[2], ARGV[1]) or '') ~= ARGV[3] then return 'taken' end
redis.call('SREM', KEYS[3], ARGV[1])
${MARK_ALIVE}
return 'joined'`;

/** The live members and their URLs. */
const LIVE = `${LUA_NOW}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
local out = {}
for _, id in ipairs(ids) do
  table.insert(out, id)
  table.insert(out, redis.call('HGET', KEYS[2], id) or '')
end
return out`;

/** The live members that gave a URL and are not draining (KEYS[3]: the draining set), but ARGV[1]. */
const SERVING = `${LUA_NOW}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
local out = {}
for _, id in ipairs(ids) do
  if id ~= ARGV[1] and redis.call('SISMEMBER', KEYS[3], id) == 0 then
    local url = redis.call('HGET', KEYS[2], id)
    if url and url ~= '' then table.insert(out, id) end
  end
end
return out`;

/** One member's URL ('' when it gave none) if its heartbeat is current, else nothing. */
const URL_IF_LIVE = `${LUA_ALIVE}
if not alive(KEYS[1], ARGV[1]) then return false end
return redis.call('HGET', KEYS[2], ARGV[1]) or ''`;

export class Instances {
  readonly #redis: RedisConnection;
  readonly #opts: InstanceOptions;
  readonly #ttlMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** The beat under way, if any (stop waits for it, so it cannot bring the member back after leaving). */
  #beating: Promise<void> | undefined;

  constructor(redis: RedisConnection, opts: InstanceOptions) {
    this.#redis = redis;
    this.#opts = opts;
    this.#ttlMs = opts.ttlMs ?? opts.heartbeatMs * 3;
  }

  /** The sorted set of heartbeats (scripts of other seams read it). */
  get key(): string {
    return this.#redis.key('instances');
  }

  /**
   * Beats once now (a restarted instance is not draining), then every `heartbeatMs` until `stop()`.
   * Refuses an id that a live instance at another internal URL holds: two instances with one id would
   * take each other's calls.
   */
  async start(): Promise<void> {
    const joined = await this.#redis.client.eval(JOIN, {
      keys: [this.key, this.#redis.key('instance-urls'), this.drainingKey],
      arguments: [this.#opts.instanceId, String(this.#ttlMs), this.#opts.internalUrl ?? ''],
    });
    if (joined !== 'joined') {
      throw new Error(`Another live instance at another internal URL has the instance id ${this.#opts.instanceId}: give each instance its own`);
    }
    this.#timer = setInterval(() => {
      this.#beating = this.beat()
        .catch((e: unknown) => this.#opts.onError?.(e as Error))
        .finally(() => (this.#beating = undefined));
    }, this.#opts.heartbeatMs);
    this.#timer.unref?.();
  }

  async beat(): Promise<void> {
    await this.#redis.client.eval(BEAT, {
      keys: [this.key, this.#redis.key('instance-urls')],
      arguments: [this.#opts.instanceId, String(this.#ttlMs), this.#opts.internalUrl ?? ''],
    });
  }

  /** The live instances: id → internal URL ('' when it gave none). */
  async live(): Promise<Map<string, string>> {
    const flat = (await this.#redis.client.eval(LIVE, { keys: [this.key, this.#redis.key('instance-urls')], arguments: [] })) as string[];
    const out = new Map<string, string>();
    for (let i = 0; i < flat.length; i += 2) out.set(flat[i]!, flat[i + 1]!);
    return out;
  }

  /** The set of draining instances (scripts of other seams read it). */
  get drainingKey(): string {
    return this.#redis.key('instances-draining');
  }

  /** Marks this instance draining: it serves what it holds, and others stop sending it new work. */
  async markDraining(): Promise<void> {
    await this.#redis.client.sAdd(this.drainingKey, this.#opts.instanceId);
  }

  /** One of the other live instances that take new work (not draining, reachable at an internal URL), at random; undefined when there is none. */
  async anyServing(): Promise<string | undefined> {
    const keys = [this.key, this.#redis.key('instance-urls'), this.drainingKey];
    const ids = (await this.#redis.client.eval(SERVING, { keys, arguments: [this.#opts.instanceId] })) as string[];
    return ids[Math.floor(Math.random() * ids.length)];
  }

  /** True while the heartbeat of `instanceId` is current. */
  async alive(instanceId: string): Promise<boolean> {
    return (await this.urlOf(instanceId)) !== undefined;
  }

  /** The internal URL of `instanceId` while it lives ('' when it gave none); undefined once it is gone. One round trip. */
  async urlOf(instanceId: string): Promise<string | undefined> {
    const url = await this.#redis.client.eval(URL_IF_LIVE, { keys: [this.key, this.#redis.key('instance-urls')], arguments: [instanceId] });
    return typeof url === 'string' ? url : undefined;
  }

  /** Stops beating and leaves the set (a graceful end: others see it gone at once). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#beating;
    await this.#redis.client.zRem(this.key, this.#opts.instanceId).catch(() => undefined);
    await this.#redis.client.sRem(this.drainingKey, this.#opts.instanceId).catch(() => undefined);
  }
}
