/**
 * The HTTP side of `subscriptions/listen`: an SSE stream that starts with the acknowledgement, carries
 * the subscribed notifications, keeps itself alive, and ends with the final result when the gateway
 * shuts down. The client ends it by closing the stream.
 */
import type { ListenSession } from '../fronts/dialect.js';
import { KEEPALIVE_MS, SSE_HEADERS, SSE_KEEPALIVE, sseEvent } from './sse.js';

export function listenResponse(session: ListenSession): Response {
  let detach: (() => void) | undefined;
  let keepalive: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const stop = (): void => {
    closed = true;
    clearInterval(keepalive);
    detach?.();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (bytes: Uint8Array): void => {
        if (closed) return;
        try {
          controller.enqueue(bytes);
        } catch {
          stop();
        }
      };
      send(sseEvent(session.ack));
      const attached = session.attach(
        (message) => send(sseEvent(message)),
        () => {
          send(sseEvent(session.final));
          stop();
          controller.close();
        },
      );
      // The gateway may have closed while the stream was being set up: then `onEnd` already ran
      // (inside attach) and the stream is over; detach at once so nothing it holds stays taken.
      if (closed) return attached();
      detach = attached;
      keepalive = setInterval(() => send(SSE_KEEPALIVE), KEEPALIVE_MS);
      keepalive.unref?.();
    },
    cancel: stop,
  });
  return new Response(stream, { status: 200, headers: SSE_HEADERS });
}
