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

const encoder = new TextEncoder();

export class HttpSseServerTransport implements Transport {
  /** The session id, as the `sessionId` query parameter of the message URL. */
  readonly sessionId: string;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;
  /** The SSE body to answer `GET /sse` with. */
  readonly stream: ReadableStream<Uint8Array>;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #closed = false;
  readonly #keepAlive: ReturnType<typeof setInterval>;

  constructor(messagesUrl: string, sessionId: string = randomUUID(), keepAliveMs = 15_000) {
    this.sessionId = sessionId;
    const endpoint = `${messagesUrl}?sessionId=${encodeURIComponent(sessionId)}`;
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        controller.enqueue(encoder.encode(`event: endpoint\ndata: ${endpoint}\n\n`));
      },
      cancel: () => background('close an SSE stream the client cancelled', this.close()),
    });
    // A comment now and then keeps proxies from closing an idle stream.
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n'), keepAliveMs);
    this.#keepAlive.unref?.();
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error('the SSE stream is closed');
    this.#write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  /** Hands one POSTed message to the server. */
  deliver(message: JSONRPCMessage): void {
    this.onmessage?.(message);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#keepAlive);
    try {
      this.#controller?.close();
    } catch {
      // already closed by the client
    }
    this.onclose?.();
  }

  get closed(): boolean {
    return this.#closed;
  }

  #write(text: string): void {
    if (this.#closed) return;
    try {
      this.#controller?.enqueue(encoder.encode(text));
    } catch {
      background('close an SSE stream that cannot be written', this.close());
    }
  }
}
