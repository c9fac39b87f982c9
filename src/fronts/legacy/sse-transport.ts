/**
 * The 2024-11-05 HTTP+SSE transport, server side, web-standard: `GET /sse` opens an event stream whose
 * first event (`endpoint`) names where to POST (`/messages?sessionId=…`); every message of the server
 * goes out as an `event: message` on that stream; each POSTed message is handed to the server and
 * acknowledged with 202. The SDK v2 ships no server for this transport (only v1, on Node's http
 * objects), so this small one plugs into the v2 `Server` as its `Transport`.
 */
import { randomUUID } from 'node:crypto';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { background } from '../../util/background.js';
import { SSE_MAX_QUEUED_BYTES, sseQueue, supersedingKey, type SseQueue } from '../../util/sse-queue.js';

const encoder = new TextEncoder();

/**
 * Unread bytes past which the stream is closed (and the session with it): responses and requests are
 * never dropped, so a client that sends requests and never reads their answers is cut off here.
 */
export const SSE_MAX_UNREAD_BYTES = 16 * SSE_MAX_QUEUED_BYTES;

export class HttpSseServerTransport implements Transport {
  /** The session id, as the `sessionId` query parameter of the message URL. */
  readonly sessionId: string;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;
  /** The SSE body to answer `GET /sse` with. */
  readonly stream: ReadableStream<Uint8Array>;
  readonly #queue: SseQueue;
  #closed = false;
  readonly #keepAlive: ReturnType<typeof setInterval>;

  constructor(messagesUrl: string, sessionId: string = randomUUID(), keepAliveMs = 15_000) {
    this.sessionId = sessionId;
    const endpoint = `${messagesUrl}?sessionId=${encodeURIComponent(sessionId)}`;
    // Notifications wait only while the client reads (util/sse-queue.ts); responses and requests always.
    this.#queue = sseQueue({
      start: (q) => q.must(encoder.encode(`event: endpoint\ndata: ${endpoint}\n\n`)),
      cancel: () => background('close an SSE stream the client cancelled', this.close()),
    });
    this.stream = this.#queue.stream;
    // A comment now and then keeps proxies from closing an idle stream.
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n', 'keep-alive'), keepAliveMs);
    this.#keepAlive.unref?.();
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error('the SSE stream is closed');
    const droppable = !('id' in message);
    this.#write(`event: message\ndata: ${JSON.stringify(message)}\n\n`, droppable ? supersedingKey(message) : undefined, !droppable);
  }

  /** Hands one POSTed message to the server. */
  deliver(message: JSONRPCMessage): void {
    this.onmessage?.(message);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#keepAlive);
    this.#queue.close();
    this.onclose?.();
  }

  get closed(): boolean {
    return this.#closed;
  }

  #write(text: string, key?: string, must = false): void {
    if (this.#closed) return;
    const bytes = encoder.encode(text);
    if (!must) return this.#queue.may(bytes, key);
    this.#queue.must(bytes);
    if (this.#queue.queuedBytes > SSE_MAX_UNREAD_BYTES) {
      const error = new Error(`the client left more than ${SSE_MAX_UNREAD_BYTES} bytes of its SSE stream unread`);
      this.#queue.abort(error);
      this.onerror?.(error);
      background('close an SSE stream its client does not read', this.close());
    }
  }
}
