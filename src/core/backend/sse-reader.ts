/**
 * Reads a backend's `text/event-stream` response as it arrives: one push parser (eventsource-parser's
 * callback API) fed from the socket's data events, so every event of a chunk is handed on in the same
 * turn of the event loop, with no stream pipeline per response (issue 30). An event's `data:` may
 * span several lines; they are joined with newlines, as the SSE format says.
 */
import type { IncomingMessage } from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** The longest event the reader holds (a larger one ends the stream with an error). */
export const MAX_EVENT_BYTES = 64 * 1024 * 1024;

export interface SseHandlers {
  onEvent(event: EventSourceMessage): void;
  /** The server's `retry:` field: how long to wait before reconnecting. */
  onRetry?(ms: number): void;
  /** The stream is over: ended by the server (`error` undefined) or broken. Called once. */
  onEnd(error?: Error): void;
}

export function readEvents(res: IncomingMessage, handlers: SseHandlers): void {
  let over = false;
  const end = (error?: Error): void => {
    if (over) return;
    over = true;
    handlers.onEnd(error);
  };
  const parser = createParser({
    onEvent: (e) => handlers.onEvent(e),
    onRetry: (ms) => handlers.onRetry?.(ms),
    onError: (e) => {
      if (e.type === 'max-buffer-size-exceeded') res.destroy(e);
    },
    maxBufferSize: MAX_EVENT_BYTES,
  });
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    if (!over) parser.feed(chunk);
  });
  res.once('error', (e) => end(e));
  res.once('close', () => end(res.complete ? undefined : new Error('the response stream broke')));
}
