/**
 * The cluster's fan-out on Redis pub/sub: one channel (`<prefix>events`) every instance subscribes to.
 * A publication with `once` is one script: the owner check, the window and the PUBLISH happen in one
 * step, so two instances that saw the same event cannot both send it.
 */
import type { Fanout, FanoutMessage, Once } from '../fanout.js';
import type { RedisConnection } from './connection.js';
import { listenOn } from './pubsub.js';

/** KEYS[1] the once-key; ARGV: instance, window ms, channel, message. 1 when published. */
const PUBLISH_ONCE = `local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`;

export class RedisFanout implements Fanout {
  readonly #redis: RedisConnection;
  readonly #instanceId: string;
  readonly #onBadMessage: (e: Error) => void;

  constructor(redis: RedisConnection, instanceId: string, onBadMessage: (e: Error) => void = () => undefined) {
    this.#redis = redis;
    this.#instanceId = instanceId;
    this.#onBadMessage = onBadMessage;
  }

  get #channel(): string {
    return this.#redis.key('events');
  }

  async publish(message: FanoutMessage, once?: Once): Promise<boolean> {
    const text = JSON.stringify(message);
    if (!once) {
      await this.#redis.run((c) => c.publish(this.#channel, text));
      return true;
    }
    const sent = await this.#redis.run((c) =>
      c.eval(PUBLISH_ONCE, {
        keys: [this.#redis.key('once', once.key)],
        arguments: [this.#instanceId, String(Math.max(1, Math.ceil(once.windowMs))), this.#channel, text],
      }),
    );
    return sent === 1;
  }

  listen(listener: (message: FanoutMessage) => void): Promise<() => Promise<void>> {
    return listenOn(this.#redis, this.#channel, (text) => {
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch (e) {
        return this.#onBadMessage(e as Error);
      }
      if (message !== null && typeof message === 'object' && !Array.isArray(message)) listener(message as FanoutMessage);
    });
  }
}
