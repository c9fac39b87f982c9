/**
 * The Redis connection of a cluster of gateway instances (node-redis, the official client: typed
 * commands, Lua scripts with `eval`, pub/sub on a duplicated connection, reconnect with backoff).
 * Every key the gateway writes starts with `prefix`, so several clusters (or test runs) can share one
 * Redis. The URL is never logged (it may carry a password).
 *
 * Redis is a dependency that can go away (spec/notes/cluster.md, "When Redis goes away"): every
 * command goes through `run` (or `lookup`), which fails at once while the connection is down (no
 * offline queue), gives up after `commandTimeoutMs`, and turns any failure into the local error
 * `cluster_unavailable` — retryable, never an unhandled rejection. Every connection (the subscriber
 * too) has an 'error' listener, so a lost connection is a logged line, not an uncaught error.
 */
import { ErrorReply, createClient } from 'redis';
import { uriForLog } from '../../util/uri-for-log.js';
import { GatewayError, isClusterUnavailable } from '../../errors.js';
import type { Logger } from '../../log.js';

/** The longest pause between two reconnection attempts while Redis is away. */
export const MAX_RECONNECT_DELAY_MS = 1_000;

/**
 * The most commands one connection holds unanswered or unwritten: past it a command fails at once with
 * `cluster_unavailable`. A Redis that stops answering (frozen, or a partition that sends no reset)
 * leaves the connection up; commands then wait in node-redis's queues, written when the socket drains
 * or dropped when it breaks, after their callers were told `cluster_unavailable` (`run`'s deadline).
 */
export const MAX_QUEUED_COMMANDS = 10_000;

function makeClient(url: string, connectTimeoutMs: number, maxQueued: number) {
  return createClient({
    url,
    socket: {
      connectTimeout: connectTimeoutMs,
      // Backoff up to 1 s between attempts while Redis is away; commands fail meanwhile (no offline queue).
      reconnectStrategy: (retries: number) => Math.min(MAX_RECONNECT_DELAY_MS, 50 * 2 ** Math.min(retries, 5)),
    },
    disableOfflineQueue: true,
    commandsQueueMaxLength: maxQueued,
    // `run`'s own deadline (one timer, cleared on the answer) bounds how long a caller waits, and the
    // queue's length how much waits unsent. node-redis's own timeout (5 s; it dropped a command not yet
    // written) made an AbortSignal.timeout per command, which fires with a DOMException 5 s later
    // whether the command was answered or not: about 25 µs of CPU a command.
    commandOptions: { timeout: 0 },
  });
}

export type RedisClient = ReturnType<typeof makeClient>;

/**
 * Connects `client` within `ms`, its reconnect attempts included (node-redis retries a first connect
 * for ever): a start whose Redis never answers fails, and the entry point exits, instead of holding its
 * port open as a gateway that is forever starting.
 */
async function connectWithin(client: RedisClient, url: string, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis at ${uriForLog(url)} did not answer within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([client.connect(), late]);
  } catch (e) {
    client.destroy();
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Closes `c`: as node-redis does (the commands it holds are answered first) while Redis answers, within
 * `ms`; at once, dropping what it holds, when the connection is down or breaks with an error meanwhile;
 * at the deadline when Redis does not answer in time. A node-redis close waits until every command it
 * holds is answered, for ever: an `unsubscribe` sent while Redis was away, or to a Redis that froze,
 * held a stopping gateway until its shutdown deadline, which then exited 1.
 */
async function closeWithin(c: RedisClient, ms: number): Promise<void> {
  if (!c.isOpen) return;
  if (!c.isReady) {
    c.destroy();
    return;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  let broke: (() => void) | undefined;
  // Not closed in time, or the socket broke with an error (node-redis then settles its close with
  // neither `data` nor `end`; a socket the server closed cleanly meanwhile it does not report at all,
  // and the deadline ends that close).
  const cut = new Promise<'cut'>((resolve) => {
    timer = setTimeout(() => resolve('cut'), ms);
    timer.unref?.();
    broke = () => resolve('cut');
    c.once('error', broke);
  });
  try {
    const closing = c.close().then(
      () => 'closed' as const,
      () => 'cut' as const,
    );
    if ((await Promise.race([closing, cut])) !== 'closed') c.destroy();
  } finally {
    clearTimeout(timer);
    if (broke) c.off('error', broke);
  }
}

/** True for the local error that says the cluster's shared state cannot be reached. */
export const isUnavailable = isClusterUnavailable;

/** `e` as `cluster_unavailable` (its cause kept for the log, never shown to a client: `causeOf`). */
export function unavailable(e?: unknown): GatewayError {
  if (isUnavailable(e)) return e as GatewayError;
  return new GatewayError('cluster_unavailable', undefined, { cause: e });
}

/** What made a command fail, for the log. */
export function causeOf(e: unknown): string {
  const cause = (e as { cause?: unknown } | null)?.cause;
  return cause instanceof Error ? cause.message : e instanceof Error ? e.message : String(e);
}

/** Logs one line when `client` is lost (not one per reconnect attempt), and one when it is back. */
function logLossOnce(client: RedisClient, log: Logger, what: string): void {
  let lost = false;
  client.on('error', (e: Error) => {
    if (lost) return log.debug({ err: e.message }, `${what}: still away`);
    lost = true;
    log.warn({ err: e.message }, `${what} lost: requests that need the cluster's shared state are answered cluster_unavailable until it is back`);
  });
  client.on('ready', () => {
    if (lost) log.info({}, `${what} restored`);
    lost = false;
  });
}

export interface RedisOptions {
  readonly url: string;
  /** Prepended to every key (default `mcpgw:`). */
  readonly prefix?: string | undefined;
  readonly logger: Logger;
  /** How long the first connection may take. */
  readonly connectTimeoutMs?: number | undefined;
  /** How long a start waits for Redis to answer at all, its reconnect attempts included (default 30 s): then it fails. */
  readonly startTimeoutMs?: number | undefined;
  /** How long one command may take before it fails with `cluster_unavailable` (default 2 s). */
  readonly commandTimeoutMs?: number | undefined;
  /** The most commands held unanswered or unwritten (default `MAX_QUEUED_COMMANDS`). */
  readonly maxQueuedCommands?: number | undefined;
  /** Told each command's duration (seconds) and whether it was answered (`ok`), refused by Redis (`error`) or not answered (`unavailable`). */
  readonly onCommand?: ((seconds: number, outcome: 'ok' | 'error' | 'unavailable') => void) | undefined;
}

export interface RedisConnection {
  readonly client: RedisClient;
  /** True while commands can be sent. */
  readonly available: boolean;
  /** `prefix` + `key`. */
  key(...parts: string[]): string;
  /**
   * Runs `command` on the connection: rejects at once with `cluster_unavailable` while Redis is away,
   * and with the same error when the command fails or takes longer than `commandTimeoutMs`.
   */
  run<T>(command: (client: RedisClient) => Promise<T>): Promise<T>;
  /**
   * `run` for a read whose "nothing there" would be an answer (an owner, a home, a task): it waits
   * first, bounded, for the state of every instance to be written again after Redis came back (`hold`).
   */
  lookup<T>(command: (client: RedisClient) => Promise<T>): Promise<T>;
  /** Makes lookups wait for `until` (the re-write after Redis came back; it must settle on its own, bounded). */
  hold(until: Promise<void>): void;
  /** Calls `listener` each time the connection is ready again after it was lost. */
  onRestored(listener: () => void): void;
  /**
   * Runs `command` on the subscriber (`subscribe`, `unsubscribe`) as `run` does on the connection:
   * within the command deadline, any failure `cluster_unavailable` (a frozen Redis never answers a
   * subscribe, and node-redis waits for its answer for ever). The subscriber is a duplicate of the
   * connection, made on first use (a connection in subscribe mode sends no other command).
   */
  onSubscriber<T>(command: (sub: RedisClient) => Promise<T>): Promise<T>;
  /** Closes the connection (and every duplicate made from it). Idempotent. */
  close(): Promise<void>;
}

/**
 * Rejects with `cluster_unavailable` when `work` takes longer than `ms` (the command itself cannot be
 * taken back once written) or the connection fails; an error Redis itself answered is passed on as is.
 */
async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(unavailable(new Error(`no answer from Redis within ${ms} ms`))), ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([work, deadline]);
  } catch (e) {
    // Redis answered with an error (a script's, a wrong type): that is a fault, not Redis being away.
    if (e instanceof ErrorReply) throw e;
    throw unavailable(e);
  } finally {
    clearTimeout(timer);
    work.catch(() => undefined); // a late failure of a command that lost the race is not an unhandled one
  }
}

export async function connectRedis(opts: RedisOptions): Promise<RedisConnection> {
  const prefix = opts.prefix ?? 'mcpgw:';
  const log = opts.logger.child({ component: 'redis' });
  const commandTimeoutMs = opts.commandTimeoutMs ?? 2_000;
  const client = makeClient(opts.url, opts.connectTimeoutMs ?? 5_000, opts.maxQueuedCommands ?? MAX_QUEUED_COMMANDS);
  logLossOnce(client, log, 'redis connection');
  await connectWithin(client, opts.url, opts.startTimeoutMs ?? 30_000);
  let closed = false;
  let subscriber: Promise<RedisClient> | undefined;
  /** The subscriber's connection once made (connecting or connected), for `close()`. */
  let subscriberClient: RedisClient | undefined;
  let closing: Promise<void> | undefined;
  let held: Promise<void> | undefined;
  // Lost once 'ready' was seen: the next 'ready' is a return.
  let lost = false;
  const restored = new Set<() => void>();
  const markLost = (): void => {
    lost = true;
  };
  client.on('error', markLost);
  client.on('reconnecting', markLost);
  client.on('ready', () => {
    if (!lost || closed) return;
    lost = false;
    for (const listener of restored) listener();
  });
  const run = <T>(command: (c: RedisClient) => Promise<T>): Promise<T> => {
    if (closed || !client.isReady) {
      opts.onCommand?.(0, 'unavailable');
      return Promise.reject(unavailable());
    }
    let work: Promise<T>;
    try {
      work = command(client);
    } catch (e) {
      return Promise.reject(unavailable(e));
    }
    const done = withDeadline(work, commandTimeoutMs);
    const onCommand = opts.onCommand;
    if (!onCommand) return done;
    const started = performance.now();
    const took = (): number => (performance.now() - started) / 1000;
    done.then(
      () => onCommand(took(), 'ok'),
      (e: unknown) => onCommand(took(), e instanceof ErrorReply ? 'error' : 'unavailable'),
    );
    return done;
  };
  const subscriberConnection = (): Promise<RedisClient> => {
    if (closed) return Promise.reject(new Error('the Redis connection is closed'));
    subscriber ??= (async () => {
      const sub = client.duplicate();
      subscriberClient = sub;
      logLossOnce(sub, log, 'redis subscriber connection');
      try {
        // Within the command deadline: node-redis tries a first connect for ever, and a listener
        // made while Redis is away (a task watched) waited for ever, and so did `close()`.
        await connectWithin(sub, opts.url, commandTimeoutMs);
      } catch (e) {
        subscriber = undefined; // the next listener tries again
        throw unavailable(e);
      }
      return sub;
    })();
    return subscriber;
  };
  return {
    client,
    get available() {
      return !closed && client.isReady;
    },
    key: (...parts) => prefix + parts.join(':'),
    run,
    async lookup(command) {
      // While Redis is away a lookup fails at once; once it answers, after the re-write.
      if (held && client.isReady) await held;
      return run(command);
    },
    hold(until) {
      const settled = until.then(
        () => undefined,
        () => undefined,
      );
      held = settled;
      settled
        .finally(() => {
          if (held === settled) held = undefined;
        })
        .catch(() => undefined);
    },
    onRestored(listener) {
      restored.add(listener);
    },
    async onSubscriber(command) {
      const sub = await subscriberConnection();
      let work;
      try {
        work = command(sub);
      } catch (e) {
        throw unavailable(e);
      }
      return withDeadline(work, commandTimeoutMs);
    },
    close() {
      closing ??= (async () => {
        closed = true;
        restored.clear();
        // A subscriber still connecting is not waited for: dropped (its listeners are told cluster_unavailable).
        await Promise.all([subscriberClient && closeWithin(subscriberClient, commandTimeoutMs), closeWithin(client, commandTimeoutMs)]);
      })();
      return closing;
    },
  };
}
