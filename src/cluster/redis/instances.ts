/**
 * The live instances of a cluster: each instance keeps its member in a sorted set whose score is when
 * its heartbeat lapses (ms, Redis server time), renewed every `heartbeatMs`; an instance whose score is
 * in the past is dead, at once, whatever it held (no wait for a timeout). Its internal URL (where others
 * forward retries for its calls) sits in a hash beside it.
 */
import { sleep } from '../../util/abort.js';
import { background, type BackgroundLog } from '../../util/background.js';
import { isUnavailable, type RedisConnection } from './connection.js';

export interface InstanceOptions {
  readonly instanceId: string;
  /** Where other instances reach this one (forwarded retries); optional until forwarding is used. */
  readonly internalUrl?: string | undefined;
  readonly heartbeatMs: number;
  /** How long a heartbeat counts; more than `heartbeatMs` (default 3×). */
  readonly ttlMs?: number | undefined;
  readonly onError?: (e: Error) => void;
  /** Told once a heartbeat succeeds after `onError` (a Redis that froze and thawed drops no connection: nothing else says it is back). */
  readonly onRecovered?: () => void;
  /** Where a failed background step (a report of an instance gone, its clearing) is reported. */
  readonly log?: BackgroundLog | undefined;
}

/** Lua: `now`, in ms on the Redis server's clock (every instance reads the same clock). */
const LUA_NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Lua: `now`; `alive(heartbeats, id)`: true while the heartbeat of `id` in the set `heartbeats` is
 * current; `standing(heartbeats, id, grace)`: true while it is current or lapsed less than `grace` ms
 * ago (a late beat on a loaded machine is not a death: what the instance holds is still its own). An
 * instance that left is in neither.
 */
export const LUA_ALIVE = `${LUA_NOW}
local function alive(heartbeats, id)
  local lapse = redis.call('ZSCORE', heartbeats, id)
  return lapse and tonumber(lapse) > now
end
local function standing(heartbeats, id, grace)
  local lapse = redis.call('ZSCORE', heartbeats, id)
  return lapse and tonumber(lapse) + tonumber(grace) > now
end`;

/** Lua, after `now`: marks ARGV[1] alive until now + ARGV[2] in KEYS[1], and records its URL ARGV[3] in KEYS[2]. */
const MARK_ALIVE = `redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end`;

/** Lua: appends the live members (KEYS[1] the heartbeat set, KEYS[2] the URLs; `now` set) and their URLs to `out`. */
const COLLECT_LIVE = `for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')) do
  table.insert(out, id)
  table.insert(out, redis.call('HGET', KEYS[2], id) or '')
end`;

/** Lua: returns the live members and their URLs, flat. */
const RETURN_LIVE = `local out = {}
${COLLECT_LIVE}
return out`;

/**
 * A heartbeat (and the dropping of members dead for a day, and of their URLs); returns whether another
 * instance reported this one gone ('1' or '0'; KEYS[3] the set of those reports: the mark is cleared
 * once what it asks for is done, `Instances.beat`), then the live members and their URLs, flat.
 */
const BEAT = `${LUA_NOW}
local out = { tostring(redis.call('SISMEMBER', KEYS[3], ARGV[1])) }
${MARK_ALIVE}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - 86400000)) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('SREM', KEYS[3], id)
end
${COLLECT_LIVE}
return out`;

/** Back after Redis came back: a heartbeat, and this instance's draining mark as it is (KEYS[3] the draining set; ARGV[4] '1' when draining). */
const REJOIN = `${LUA_NOW}
${MARK_ALIVE}
if ARGV[4] == '1' then redis.call('SADD', KEYS[3], ARGV[1]) else redis.call('SREM', KEYS[3], ARGV[1]) end
return 1`;

/**
 * The first beat: refused ('taken') while a live member of the same id has another URL (ARGV as BEAT;
 * KEYS[3] the draining set, left by a restarted instance; KEYS[4] the reports of instances gone: a
 * process that starts holds nothing).
 */
const JOIN = `${LUA_ALIVE}
if alive(KEYS[1], ARGV[1]) and (redis.call('HGET', KEYS[2], ARGV[1]) or '') ~= ARGV[3] then return 'taken' end
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
${MARK_ALIVE}
return 'joined'`;

/**
 * Marks each of ARGV as reported gone in KEYS[2], while its heartbeat in KEYS[1] is there and lapsed:
 * not one that left (its heartbeat removed), nor one that has beaten again since (a restart that joined).
 */
const REPORT_GONE = `${LUA_NOW}
for _, id in ipairs(ARGV) do
  local lapse = redis.call('ZSCORE', KEYS[1], id)
  if lapse and tonumber(lapse) <= now then redis.call('SADD', KEYS[2], id) end
end
return 1`;

/** The live members and their URLs. */
const LIVE = `${LUA_NOW}
${RETURN_LIVE}`;

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

/** One member's URL ('' when it gave none) while it stands (ARGV[2]: the grace, ms), else nothing. */
const URL_IF_STANDING = `${LUA_ALIVE}
if not standing(KEYS[1], ARGV[1], ARGV[2]) then return false end
return redis.call('HGET', KEYS[2], ARGV[1]) or ''`;

/** How often `awaitPeers` looks again. */
const PEER_POLL_MS = 50;

/** How long an instance seen live counts as "seen lately" (see `#recent`). */
const RECENT_MS = 10_000;

export class Instances {
  readonly #redis: RedisConnection;
  readonly #opts: InstanceOptions;
  readonly #ttlMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** The beat under way, if any (stop waits for it, so it cannot bring the member back after leaving). */
  #beating: Promise<void> | undefined;
  /** The live instances (this one included) and their URLs as of the last beat that reached Redis. */
  #known = new Map<string, string>();
  /**
   * The instances seen live lately (within `RECENT_MS` of the last beat that reached Redis), and their
   * URLs: a heartbeat that lapsed once on a loaded machine does not drop an instance from it. What
   * forwarding uses while Redis is away, and whom a return waits for.
   */
  readonly #recent = new Map<string, { url: string; seen: number }>();
  /** Instances missing from the live set, since when: reported gone once missing for a whole heartbeat ttl. */
  readonly #suspects = new Map<string, number>();
  /** True while what this instance holds is being written again (after Redis came back): no beat until `rejoin`. */
  #held = false;
  /** True from a return until the instances that were live are back (`awaitPeers`): beats do not report deaths meanwhile. */
  #settling = false;
  #draining = false;
  /** True after a beat failed, until one succeeds (one log line per outage, not one per beat). */
  #failing = false;
  readonly #goneListeners = new Set<(instanceId: string) => void>();
  readonly #takenForGoneListeners = new Set<() => void>();

  constructor(redis: RedisConnection, opts: InstanceOptions) {
    this.#redis = redis;
    this.#opts = opts;
    this.#ttlMs = opts.ttlMs ?? opts.heartbeatMs * 3;
  }

  /** The sorted set of heartbeats (scripts of other seams read it). */
  get key(): string {
    return this.#redis.key('instances');
  }

  /** How long a heartbeat counts. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** How many instances were live at the last beat that reached Redis (at least 1: this one). */
  get knownLive(): number {
    return Math.max(1, this.#known.size);
  }

  /**
   * Beats once now (a restarted instance is not draining), then every `heartbeatMs` until `stop()`.
   * Refuses an id that a live instance at another internal URL holds: two instances with one id would
   * take each other's calls.
   */
  async start(): Promise<void> {
    const joined = await this.#redis.run((c) =>
      c.eval(JOIN, {
        keys: [this.key, this.#redis.key('instance-urls'), this.drainingKey, this.#goneKey],
        arguments: [this.#opts.instanceId, String(this.#ttlMs), this.#opts.internalUrl ?? ''],
      }),
    );
    if (joined !== 'joined') {
      throw new Error(`Another live instance at another internal URL has the instance id ${this.#opts.instanceId}: give each instance its own`);
    }
    this.#learn(new Map([[this.#opts.instanceId, this.#opts.internalUrl ?? '']]));
    this.#timer = setInterval(() => {
      this.#beating = this.beat()
        .then(
          (beat) => {
            // A beat held back (the state being written again) says nothing of Redis either way.
            if (!beat) return;
            if (this.#failing) this.#opts.onRecovered?.();
            this.#failing = false;
          },
          (e: unknown) => {
            if (!this.#failing) this.#opts.onError?.(e as Error);
            this.#failing = true;
          },
        )
        .finally(() => (this.#beating = undefined));
    }, this.#opts.heartbeatMs);
    this.#timer.unref?.();
  }

  /** One heartbeat (none while this instance's state is being written again after Redis came back); whether it beat. */
  async beat(): Promise<boolean> {
    if (this.#held) return false;
    const [declared, ...flat] = (await this.#redis.run((c) =>
      c.eval(BEAT, {
        keys: [this.key, this.#redis.key('instance-urls'), this.#goneKey],
        arguments: [this.#opts.instanceId, String(this.#ttlMs), this.#opts.internalUrl ?? ''],
      }),
    )) as string[];
    if (declared === '1') {
      for (const listener of this.#takenForGoneListeners) listener();
      // Cleared once done: a mark cleared with a reply that was lost (a deadline passed) would be missed.
      background(
        'clear the report that this instance was gone',
        this.#redis.run((c) => c.sRem(this.#goneKey, this.#opts.instanceId)),
        this.#opts.log,
      );
    }
    // Redis went away meanwhile, or came back and the others are not all back yet: what it knew is kept.
    if (!this.#held && !this.#settling) this.#learn(pairs(flat));
    return true;
  }

  /** The set of instances another one reported gone, each cleared by its own next beat. */
  get #goneKey(): string {
    return this.#redis.key('instances-reported-gone');
  }

  /** Calls `listener` with each instance that was live and is no longer (its heartbeat lapsed, or it left). */
  onGone(listener: (instanceId: string) => void): void {
    this.#goneListeners.add(listener);
  }

  /**
   * Calls `listener` when another instance had reported this one gone (its heartbeat lapsed for a
   * whole ttl: it stood still, was starved of CPU, or was cut off from Redis while the others were
   * not), told at the first beat after: the calls it holds were reported gone to their clients' retries
   * meanwhile. Without Redis nobody reports anyone gone; on its return no death is reported until the
   * instances that were live are back or `awaitPeers`'s bound passes.
   */
  onTakenForGone(listener: () => void): void {
    this.#takenForGoneListeners.add(listener);
  }

  /**
   * The live set as Redis has it now. An instance that was live and is missing for a whole heartbeat
   * ttl (a lapse on a loaded machine is not a death) is reported gone.
   */
  #learn(live: Map<string, string>): void {
    const now = Date.now();
    for (const id of this.#known.keys()) if (!live.has(id) && !this.#suspects.has(id)) this.#suspects.set(id, now);
    this.#known = live;
    for (const [id, url] of live) {
      this.#recent.set(id, { url, seen: now });
      this.#suspects.delete(id);
    }
    for (const [id, { seen }] of this.#recent) if (now - seen > RECENT_MS) this.#recent.delete(id);
    const gone: string[] = [];
    for (const [id, since] of this.#suspects) {
      if (id === this.#opts.instanceId || now - since < this.#ttlMs) continue;
      this.#suspects.delete(id);
      gone.push(id);
    }
    if (gone.length === 0) return;
    // Told to each instance reported gone at its next beat, should it still run (`onTakenForGone`).
    const keys = [this.key, this.#goneKey];
    background(
      'mark the instances reported gone',
      this.#redis.run((c) => c.eval(REPORT_GONE, { keys, arguments: gone })),
      this.#opts.log,
    );
    for (const id of gone) for (const listener of this.#goneListeners) listener(id);
  }

  /** Stops the heartbeat until `rejoin()`: this instance's record is written last, after what it holds. */
  hold(): void {
    this.#held = true;
    this.#settling = true;
  }

  /** Writes this instance's record again (heartbeat, URL, draining mark) and beats again. */
  async rejoin(): Promise<void> {
    await this.#redis.run((c) =>
      c.eval(REJOIN, {
        keys: [this.key, this.#redis.key('instance-urls'), this.drainingKey],
        arguments: [this.#opts.instanceId, String(this.#ttlMs), this.#opts.internalUrl ?? '', this.#draining ? '1' : '0'],
      }),
    );
    this.#held = false;
    if (this.#failing) this.#opts.onRecovered?.();
    this.#failing = false;
  }

  /**
   * Resolves once every instance that was live before Redis went away is live again (each writes its
   * record last, after what it holds), or after `boundMs` (an instance that does not come back died
   * meanwhile), or when Redis goes away again, or `signal` aborts. Never rejects; the ids still missing.
   */
  async awaitPeers(boundMs: number, signal?: AbortSignal): Promise<string[]> {
    const expected = [...this.#recent.keys()].filter((id) => id !== this.#opts.instanceId);
    const deadline = Date.now() + boundMs;
    for (;;) {
      let live: Map<string, string>;
      try {
        live = await this.#fetchLive();
      } catch {
        return expected;
      }
      const missing = expected.filter((id) => !live.has(id));
      if (missing.length === 0 || Date.now() >= deadline || signal?.aborted) {
        this.#settling = false;
        this.#learn(live);
        return missing;
      }
      await sleep(PEER_POLL_MS, signal).catch(() => undefined);
    }
  }

  async #fetchLive(): Promise<Map<string, string>> {
    return pairs((await this.#redis.run((c) => c.eval(LIVE, { keys: [this.key, this.#redis.key('instance-urls')], arguments: [] }))) as string[]);
  }

  /** The live instances: id → internal URL ('' when it gave none). */
  async live(): Promise<Map<string, string>> {
    return pairs((await this.#redis.lookup((c) => c.eval(LIVE, { keys: [this.key, this.#redis.key('instance-urls')], arguments: [] }))) as string[]);
  }

  /** The set of draining instances (scripts of other seams read it). */
  get drainingKey(): string {
    return this.#redis.key('instances-draining');
  }

  /** Marks this instance draining: it serves what it holds, and others stop sending it new work. */
  async markDraining(): Promise<void> {
    this.#draining = true;
    await this.#redis.run((c) => c.sAdd(this.drainingKey, this.#opts.instanceId));
  }

  /** One of the other live instances that take new work (not draining, reachable at an internal URL), at random; undefined when there is none. */
  async anyServing(): Promise<string | undefined> {
    const keys = [this.key, this.#redis.key('instance-urls'), this.drainingKey];
    const ids = (await this.#redis.lookup((c) => c.eval(SERVING, { keys, arguments: [this.#opts.instanceId] }))) as string[];
    return ids[Math.floor(Math.random() * ids.length)];
  }

  /**
   * True until `instanceId` is known gone: while its heartbeat is current or lapsed less than a whole
   * heartbeat ttl ago (while Redis is away: as of the last beat); false once it left. What sends a
   * request to the instance that holds its call, task or session: a late beat on a loaded machine sends
   * nothing elsewhere and fails nothing.
   */
  async alive(instanceId: string): Promise<boolean> {
    return (await this.urlOf(instanceId)) !== undefined;
  }

  /**
   * The internal URL of `instanceId` until it is known gone (as `alive`; '' when it gave none). One
   * round trip. While Redis is away, the answer of the last beat: a request for what a live instance
   * holds still reaches it (an instance that died meanwhile cannot be reached, and the request is served
   * here, where the client is told what can be told).
   */
  async urlOf(instanceId: string): Promise<string | undefined> {
    try {
      const url = await this.#redis.lookup((c) =>
        c.eval(URL_IF_STANDING, { keys: [this.key, this.#redis.key('instance-urls')], arguments: [instanceId, String(this.#ttlMs)] }),
      );
      return typeof url === 'string' ? url : undefined;
    } catch (e) {
      const recent = this.#recent.get(instanceId);
      if (!isUnavailable(e) || !recent) throw e;
      return recent.url;
    }
  }

  /** Stops beating and leaves the set (a graceful end: others see it gone at once). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#beating;
    // At once, not one after another: with Redis frozen each waits out the command deadline.
    // Its URL goes too: instances that start with new ids (a new state folder each) left one each for ever.
    await Promise.all([
      this.#redis.run((c) => c.zRem(this.key, this.#opts.instanceId)).catch(() => undefined),
      this.#redis.run((c) => c.sRem(this.drainingKey, this.#opts.instanceId)).catch(() => undefined),
      this.#redis.run((c) => c.hDel(this.#redis.key('instance-urls'), this.#opts.instanceId)).catch(() => undefined),
    ]);
  }
}

function pairs(flat: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i]!, flat[i + 1]!);
  return out;
}
