/**
 * Listening on one pub/sub channel through the connection's subscriber (node-redis keeps several
 * listeners per channel, unsubscribes the channel with the last one, and subscribes again after a
 * reconnect).
 */
import type { RedisConnection } from './connection.js';

/** Calls `listener` with each message on `channel`; resolves once subscribed, to the function that stops it (idempotent). */
export async function listenOn(redis: RedisConnection, channel: string, listener: (text: string) => void): Promise<() => Promise<void>> {
  const sub = await redis.subscriber();
  const onMessage = (text: string): void => listener(text);
  await sub.subscribe(channel, onMessage);
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    await sub.unsubscribe(channel, onMessage).catch(() => undefined);
  };
}
