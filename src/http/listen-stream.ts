/**
 * The HTTP side of `subscriptions/listen`: an SSE stream that starts with the acknowledgement, carries
 * the subscribed notifications, keeps itself alive, and ends with the final result when the gateway
 * shuts down. The client ends it by closing the stream.
 *
 * A client that does not read is held to util/sse-queue.ts's bound: past it, only the latest notification of
 * each kind waits (a list change says "list again", so a later one stands for an earlier one; a task's
 * notification carries its whole state, so its latest stands for the rest).
 */
import type { ListenSession } from '../fronts/dialect.js';
import { KEEPALIVE_MS, SSE_HEADERS, SSE_KEEPALIVE, sseEvent } from './sse.js';
import { sseQueue, supersedingKey } from '../util/sse-queue.js';

export function listenResponse(session: ListenSession): Response {
  let detach: (() => void) | undefined;
  let keepalive: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const stop = (): void => {
    closed = true;
    clearInterval(keepalive);
    detach?.();
  };
  const queue = sseQueue({
    start(q) {
      q.must(sseEvent(session.ack));
      const attached = session.attach(
        (message) => {
          if (!closed) q.may(sseEvent(message), supersedingKey(message));
        },
        () => {
          if (!closed) q.must(sseEvent(session.final));
          stop();
          q.close();
        },
      );
      // The gateway may have closed while the stream was being set up: then `onEnd` already ran
      // (inside attach) and the stream is over; detach at once so nothing it holds stays taken.
      if (closed) return attached();
      detach = attached;
      keepalive = setInterval(() => q.may(SSE_KEEPALIVE, 'keep-alive'), KEEPALIVE_MS);
      keepalive.unref?.();
    },
    cancel: stop,
  });
  return new Response(queue.stream, { status: 200, headers: SSE_HEADERS });
}
