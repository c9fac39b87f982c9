/**
 * Listening on one pub/sub channel through the connection's subscriber (node-redis keeps several
 * listeners per channel, unsubscribes the channel with the last one, and subscribes again after a
 * reconnect).
 */
import { isUnavailable, type RedisConnection } from './connection.js';

/**
 * Calls `listener` with each message on `channel`; resolves once subscribed, to the function that stops
 * it (idempotent). Both within the command deadline, failing `cluster_unavailable`: a subscribe not
 * answered in time may still be done once Redis answers, so it is taken back (the connection sends the
 * two in order), and no listener is left behind.
 */
export async function listenOn(redis: RedisConnection, channel: string, listener: (text: string) => void): Promise<() => Promise<void>> {
  const onMessage = (text: string): void => listener(text);
  const unsubscribe = (): Promise<void> => redis.onSubscriber((sub) => sub.unsubscribe(channel, onMessage)).catch(() => undefined);
  try {
    await redis.onSubscriber((sub) => sub.subscribe(channel, onMessage));
  } catch (e) {
    if (isUnavailable(e)) await unsubscribe();
    throw e;
  }
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    await unsubscribe();
  };
}
