/**
 * The cluster seams on Redis (call directory, round claims, quotas), each one atomic step: a single
 * command or one Lua script, never a check followed by a set. Liveness comes from the heartbeats of
 * `Instances`: a call whose owner's heartbeat lapsed has no owner, and a dead instance's quota units no
 * longer count (they are dropped the next time the counter is read).
 */
import type { CallDirectory } from '../call-directory.js';
import type { NamingQuotas, QuotaCounter } from '../quotas.js';
import type { RoundClaims } from '../round-claims.js';
import type { StoredTask, TaskStore } from '../task-store.js';
import type { SharedEntries, SharedEntry } from '../shared-entries.js';
import type { RedisConnection } from './connection.js';
import { listenOn } from './pubsub.js';
import { LUA_ALIVE, type Instances } from './instances.js';

/** The owner of a call if its heartbeat is current, else nothing. */
const OWNER = `${LUA_ALIVE}
local owner = redis.call('GET', KEYS[1])
if owner and alive(KEYS[2], owner) then return owner end
return false`;

export class RedisCallDirectory implements CallDirectory {
  readonly #redis: RedisConnection;
  readonly #instances: Instances;
  readonly #ttlMs: number;

  /** `ttlMs`: how long an entry may outlive a call that was never unregistered (an instance that died). */
  constructor(redis: RedisConnection, instances: Instances, ttlMs: number) {
    this.#redis = redis;
    this.#instances = instances;
    this.#ttlMs = ttlMs;
  }

  async register(callId: string, instanceId: string): Promise<void> {
    await this.#redis.client.set(this.#redis.key('call', callId), instanceId, { expiration: { type: 'PX', value: this.#ttlMs } });
  }

  async ownerOf(callId: string): Promise<string | undefined> {
    const owner = await this.#redis.client.eval(OWNER, { keys: [this.#redis.key('call', callId), this.#instances.key], arguments: [] });
    return typeof owner === 'string' ? owner : undefined;
  }

  async unregister(callId: string): Promise<void> {
    await this.#redis.client.del(this.#redis.key('call', callId));
  }
}

/** Claims `round` if no round at or after it was claimed: one compare-and-set. */
const CLAIM = `
local claimed = tonumber(redis.call('GET', KEYS[1]) or '0')
if claimed >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

export class RedisRoundClaims implements RoundClaims {
  readonly #redis: RedisConnection;
  readonly #ttlMs: number;

  constructor(redis: RedisConnection, ttlMs: number) {
    this.#redis = redis;
    this.#ttlMs = ttlMs;
  }

  async claim(callId: string, round: number): Promise<boolean> {
    const won = await this.#redis.client.eval(CLAIM, { keys: [this.#redis.key('claim', callId)], arguments: [String(round), String(this.#ttlMs)] });
    return won === 1;
  }

  async forget(callId: string): Promise<void> {
    await this.#redis.client.del(this.#redis.key('claim', callId));
  }
}

/**
 * Takes one unit from every counter (KEYS[2..]) if each stays under its limit (ARGV[2..]), counting
 * only the units of live instances: each counter is a hash instance → units, and the units of an
 * instance whose heartbeat lapsed are dropped on the way. 1 when taken; -(n + 1) when the counter at
 * 0-based index n is at its limit.
 */
const ACQUIRE = `${LUA_ALIVE}
for i = 2, #KEYS do
  local sum = 0
  local fields = redis.call('HGETALL', KEYS[i])
  for j = 1, #fields, 2 do
    if alive(KEYS[1], fields[j]) then sum = sum + tonumber(fields[j + 1])
    else redis.call('HDEL', KEYS[i], fields[j]) end
  end
  if sum >= tonumber(ARGV[i]) then return 1 - i end
end
for i = 2, #KEYS do redis.call('HINCRBY', KEYS[i], ARGV[1], 1) end
return 1`;

const RELEASE = `
for i = 1, #KEYS do
  if redis.call('HINCRBY', KEYS[i], ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[i], ARGV[1]) end
end
return 1`;

export class RedisQuotas implements NamingQuotas {
  readonly #redis: RedisConnection;
  readonly #instances: Instances;
  readonly #instanceId: string;

  constructor(redis: RedisConnection, instances: Instances, instanceId: string) {
    this.#redis = redis;
    this.#instances = instances;
    this.#instanceId = instanceId;
  }

  async acquire(counters: readonly QuotaCounter[]): Promise<boolean> {
    return (await this.acquireNaming(counters)) === -1;
  }

  async acquireNaming(counters: readonly QuotaCounter[]): Promise<number> {
    if (counters.length === 0) return -1;
    const won = await this.#redis.client.eval(ACQUIRE, {
      keys: [this.#instances.key, ...counters.map((c) => this.#redis.key('quota', c.key))],
      arguments: [this.#instanceId, ...counters.map((c) => String(c.limit))],
    });
    return won === 1 ? -1 : -Number(won) - 1;
  }

  async release(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#redis.client.eval(RELEASE, { keys: keys.map((k) => this.#redis.key('quota', k)), arguments: [this.#instanceId] });
  }
}

/** Tasks as JSON under `task:<id>`, kept for their lifetime and retention. */
export class RedisTaskStore implements TaskStore {
  readonly #redis: RedisConnection;

  constructor(redis: RedisConnection) {
    this.#redis = redis;
  }

  async save(taskId: string, task: StoredTask, ttlMs: number): Promise<void> {
    const text = JSON.stringify(task);
    await this.#redis.client
      .multi()
      .set(this.#redis.key('task', taskId), text, { expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) } })
      .publish(this.#redis.key('task-changes', taskId), text)
      .exec();
  }

  async load(taskId: string): Promise<StoredTask | undefined> {
    const text = await this.#redis.client.get(this.#redis.key('task', taskId));
    return typeof text === 'string' ? parseTask(text) : undefined;
  }

  async watch(taskId: string, listener: (task: StoredTask) => void): Promise<() => Promise<void>> {
    return listenOn(this.#redis, this.#redis.key('task-changes', taskId), (text) => {
      const task = parseTask(text);
      if (task) listener(task);
    });
  }
}

function parseTask(text: string): StoredTask | undefined {
  try {
    const task = JSON.parse(text) as StoredTask;
    return typeof task?.principal === 'string' && typeof task.instance === 'string' && typeof task.snapshot === 'object' ? task : undefined;
  } catch {
    return undefined;
  }
}

/** KEYS[1] the hash; ARGV: name, entry JSON, max. */
const ADD_ENTRY = `if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'taken' end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 'full' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 'added'`;

/** KEYS[1] the hash; ARGV: name, id. 1 when that addition was removed. */
const REMOVE_ENTRY = `local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local ok, entry = pcall(cjson.decode, v)
if ok and type(entry) == 'table' and entry.id ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])`;

/** Shared entries as one hash (`<name>` → `{id, value}`): a name is taken once, in one script with the bound. */
export class RedisSharedEntries implements SharedEntries {
  readonly #redis: RedisConnection;
  readonly #key: string;

  constructor(redis: RedisConnection, name: string) {
    this.#redis = redis;
    this.#key = redis.key(name);
  }

  async add(name: string, entry: SharedEntry, max: number): Promise<'added' | 'taken' | 'full'> {
    const r = await this.#redis.client.eval(ADD_ENTRY, { keys: [this.#key], arguments: [name, JSON.stringify(entry), String(max)] });
    return r === 'added' || r === 'full' ? r : 'taken';
  }

  async remove(name: string, id: string): Promise<boolean> {
    return (await this.#redis.client.eval(REMOVE_ENTRY, { keys: [this.#key], arguments: [name, id] })) === 1;
  }

  async all(): Promise<Map<string, SharedEntry>> {
    const out = new Map<string, SharedEntry>();
    for (const [name, text] of Object.entries(await this.#redis.client.hGetAll(this.#key))) {
      try {
        const entry = JSON.parse(text) as Partial<SharedEntry>;
        if (typeof entry.id === 'string' && typeof entry.value === 'string') out.set(name, { id: entry.id, value: entry.value });
      } catch {
        // not an entry of ours: skipped
      }
    }
    return out;
  }
}
