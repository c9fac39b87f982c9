/**
 * The cluster seams on Redis (call directory, quotas, tasks), each one atomic step: a single
 * command or one Lua script, never a check followed by a set. Liveness comes from the heartbeats of
 * `Instances`: a call whose owner is known gone (it left, or its heartbeat lapsed a whole ttl ago) has no
 * owner, and a dead instance's quota units no longer count (they are dropped the next time the counter
 * is read).
 *
 * Each seam keeps what this instance owns (its calls' entries, its quota units) so that Redis going
 * away stops nothing that needs no other instance, and `restore` writes it all again when Redis is
 * back (spec/notes/cluster.md, "When Redis goes away").
 */
import type { CallDirectory } from '../call-directory.js';
import type { NamingQuotas, QuotaCounter } from '../quotas.js';
import type { StoredTask, TaskStore } from '../task-store.js';
import type { NamedEntries, NamedEntry } from '../named-entries.js';
import { isUnavailable, type RedisConnection } from './connection.js';
import { listenOn } from './pubsub.js';
import { LUA_ALIVE, type Instances } from './instances.js';

/** The owner of a call until it is known gone (`standing`, ARGV[1] the grace), else nothing. */
const OWNER = `${LUA_ALIVE}
local owner = redis.call('GET', KEYS[1])
if owner and standing(KEYS[2], owner, ARGV[1]) then return owner end
return false`;

/** How many keys one re-write step sends at once (one MULTI). */
const BATCH = 500;

/** What a seam needs from the cluster to survive Redis going away: a write that failed is written again later. */
export interface Restoring {
  /** A write failed: write this instance's state again as soon as Redis answers. */
  dirty(): void;
}

/**
 * The call directory on Redis. This instance remembers which calls it registered: a registration that
 * fails while Redis is away is no failure of the call (it goes on; its entry is written again when Redis
 * is back, by `restore`), and this instance answers for its own calls without asking Redis.
 */
export class RedisCallDirectory implements CallDirectory {
  readonly #redis: RedisConnection;
  readonly #instances: Instances;
  readonly #ttlMs: number;
  readonly #restoring: Restoring;
  readonly #instanceId: string;
  /** The calls this instance registered as its own. */
  readonly #mine = new Set<string>();
  /** Entries whose removal failed: removed when Redis is back. */
  readonly #stale = new Set<string>();

  /** `ttlMs`: how long an entry may outlive a call that was never unregistered (an instance that died). */
  constructor(redis: RedisConnection, instances: Instances, instanceId: string, ttlMs: number, restoring: Restoring) {
    this.#redis = redis;
    this.#instances = instances;
    this.#instanceId = instanceId;
    this.#ttlMs = ttlMs;
    this.#restoring = restoring;
  }

  /** Never fails for Redis being away (an entry of this instance's call is written when it is back). */
  async register(callId: string, instanceId: string): Promise<void> {
    if (instanceId === this.#instanceId) this.#mine.add(callId);
    this.#stale.delete(callId);
    await this.#redis
      .run((c) => c.set(this.#redis.key('call', callId), instanceId, { expiration: { type: 'PX', value: this.#ttlMs } }))
      .catch(() => this.#restoring.dirty());
  }

  /**
   * The owner until it is known gone: a lapse shorter than a heartbeat ttl leaves its calls its own.
   * Throws `cluster_unavailable` while Redis is away (but for this instance's own calls).
   */
  async ownerOf(callId: string): Promise<string | undefined> {
    if (this.#mine.has(callId)) return this.#instanceId;
    const owner = await this.#redis.lookup((c) =>
      c.eval(OWNER, { keys: [this.#redis.key('call', callId), this.#instances.key], arguments: [String(this.#instances.ttlMs)] }),
    );
    return typeof owner === 'string' ? owner : undefined;
  }

  /** Never fails for Redis being away (the entry is removed when it is back). */
  async unregister(callId: string): Promise<void> {
    this.#mine.delete(callId);
    await this.#redis
      .run((c) => c.del(this.#redis.key('call', callId)))
      .catch(() => {
        this.#stale.add(callId);
        this.#restoring.dirty();
      });
  }

  /** Writes every entry of this instance's live calls again, and removes those whose removal failed; how many were written. */
  async restore(): Promise<number> {
    const stale = [...this.#stale];
    for (let i = 0; i < stale.length; i += BATCH) {
      const part = stale.slice(i, i + BATCH);
      await this.#redis.run((c) => c.del(part.map((id) => this.#redis.key('call', id))));
      for (const id of part) this.#stale.delete(id);
    }
    const mine = [...this.#mine];
    for (let i = 0; i < mine.length; i += BATCH) {
      const part = mine.slice(i, i + BATCH);
      await this.#redis.run((c) => {
        const multi = c.multi();
        for (const id of part) multi.set(this.#redis.key('call', id), this.#instanceId, { expiration: { type: 'PX', value: this.#ttlMs } });
        return multi.exec();
      });
    }
    return mine.length;
  }
}

/**
 * Takes one unit from every counter (KEYS[2..]) if each stays within its limit, counting only the units
 * of live instances: each counter is a hash instance → units, and the units of an instance whose
 * heartbeat lapsed are dropped on the way. ARGV[1] the instance; for counter KEYS[i], ARGV[2i-2] its
 * limit and ARGV[2i-1] this instance's units once this one is taken (written as they are: every write
 * of a counter is this instance's whole count, so a write lost while Redis was away is made good by
 * the next one). 1 when taken; -(n + 1) when the counter at 0-based index n is past its limit.
 */
const ACQUIRE = `${LUA_ALIVE}
for i = 2, #KEYS do
  local sum = tonumber(ARGV[2 * i - 1])
  local fields = redis.call('HGETALL', KEYS[i])
  for j = 1, #fields, 2 do
    if fields[j] ~= ARGV[1] then
      if alive(KEYS[1], fields[j]) then sum = sum + tonumber(fields[j + 1])
      else redis.call('HDEL', KEYS[i], fields[j]) end
    end
  end
  if sum > tonumber(ARGV[2 * i - 2]) then return 1 - i end
end
for i = 2, #KEYS do redis.call('HSET', KEYS[i], ARGV[1], ARGV[2 * i - 1]) end
return 1`;

/** Writes this instance's units (ARGV[1] the instance, ARGV[i + 1] the units of KEYS[i]; 0 removes the field). */
const SET_UNITS = `
for i = 1, #KEYS do
  local n = tonumber(ARGV[i + 1])
  if n > 0 then redis.call('HSET', KEYS[i], ARGV[1], n) else redis.call('HDEL', KEYS[i], ARGV[1]) end
end
return 1`;

/**
 * Cluster-wide quotas on Redis. This instance counts the units it holds itself; while Redis is away a
 * unit is taken within this instance's own share of each limit (the limit divided by the instances
 * that were live), and the counts are written again when Redis is back.
 */
export class RedisQuotas implements NamingQuotas {
  readonly #redis: RedisConnection;
  readonly #instances: Instances;
  readonly #instanceId: string;
  readonly #restoring: Restoring;
  /** Units this instance holds, by counter (a counter at 0 stays until written). */
  readonly #held = new Map<string, number>();

  constructor(redis: RedisConnection, instances: Instances, instanceId: string, restoring: Restoring) {
    this.#redis = redis;
    this.#instances = instances;
    this.#instanceId = instanceId;
    this.#restoring = restoring;
  }

  /** The units this instance holds of `key`. */
  held(key: string): number {
    return this.#held.get(key) ?? 0;
  }

  async acquire(counters: readonly QuotaCounter[]): Promise<boolean> {
    return (await this.acquireNaming(counters)) === -1;
  }

  async acquireNaming(counters: readonly QuotaCounter[]): Promise<number> {
    if (counters.length === 0) return -1;
    // Taken here first (a concurrent acquire counts it), given back when refused.
    for (const c of counters) this.#held.set(c.key, this.held(c.key) + 1);
    const args = [this.#instanceId];
    for (const c of counters) args.push(String(c.limit), String(this.held(c.key)));
    let refused: number;
    try {
      const won = await this.#redis.run((c) =>
        c.eval(ACQUIRE, { keys: [this.#instances.key, ...counters.map((q) => this.#redis.key('quota', q.key))], arguments: args }),
      );
      refused = won === 1 ? -1 : -Number(won) - 1;
    } catch (e) {
      if (!isUnavailable(e)) {
        for (const c of counters) this.#held.set(c.key, this.held(c.key) - 1);
        throw e;
      }
      const share = (limit: number): number => Math.max(1, Math.floor(limit / this.#instances.knownLive));
      refused = counters.findIndex((c) => this.held(c.key) > share(c.limit));
      if (refused === -1) this.#restoring.dirty();
    }
    if (refused !== -1) for (const c of counters) this.#held.set(c.key, this.held(c.key) - 1);
    return refused;
  }

  /** Never fails for Redis being away (the counts are written when it is back). */
  async release(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    for (const key of keys) this.#held.set(key, Math.max(0, this.held(key) - 1));
    await this.#write(keys).catch(() => this.#restoring.dirty());
  }

  async #write(keys: readonly string[]): Promise<void> {
    const counts = keys.map((k) => String(this.held(k)));
    await this.#redis.run((c) => c.eval(SET_UNITS, { keys: keys.map((k) => this.#redis.key('quota', k)), arguments: [this.#instanceId, ...counts] }));
  }

  /** Writes this instance's count of every counter it used again; how many counters. */
  async restore(): Promise<number> {
    const keys = [...this.#held.keys()];
    for (let i = 0; i < keys.length; i += BATCH) await this.#write(keys.slice(i, i + BATCH));
    for (const key of keys) if (this.held(key) === 0) this.#held.delete(key);
    return keys.length;
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
    await this.#redis.run((c) =>
      c
        .multi()
        .set(this.#redis.key('task', taskId), text, { expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) } })
        .publish(this.#redis.key('task-changes', taskId), text)
        .exec(),
    );
  }

  async load(taskId: string): Promise<StoredTask | undefined> {
    const text = await this.#redis.lookup((c) => c.get(this.#redis.key('task', taskId)));
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

/** Named entries as one hash (`<name>` → `{id, value}`): a name is taken once, in one script with the bound. */
export class RedisNamedEntries implements NamedEntries {
  readonly #redis: RedisConnection;
  readonly #key: string;

  constructor(redis: RedisConnection, name: string) {
    this.#redis = redis;
    this.#key = redis.key(name);
  }

  async add(name: string, entry: NamedEntry, max: number): Promise<'added' | 'taken' | 'full'> {
    const r = await this.#redis.run((c) => c.eval(ADD_ENTRY, { keys: [this.#key], arguments: [name, JSON.stringify(entry), String(max)] }));
    return r === 'added' || r === 'full' ? r : 'taken';
  }

  async remove(name: string, id: string): Promise<boolean> {
    return (await this.#redis.run((c) => c.eval(REMOVE_ENTRY, { keys: [this.#key], arguments: [name, id] }))) === 1;
  }

  async all(): Promise<Map<string, NamedEntry>> {
    const out = new Map<string, NamedEntry>();
    for (const [name, text] of Object.entries(await this.#redis.lookup((c) => c.hGetAll(this.#key)))) {
      try {
        const entry = JSON.parse(text) as Partial<NamedEntry>;
        if (typeof entry.id === 'string' && typeof entry.value === 'string') out.set(name, { id: entry.id, value: entry.value });
      } catch {
        // not an entry of ours: skipped
      }
    }
    return out;
  }
}
