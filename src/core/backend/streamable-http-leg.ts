/**
 * The client side of a 2025-era streamable HTTP session with a backend, as an SDK `Transport` (the
 * SDK's `Client` keeps the handshake, the types and the schemas; this is only the wire). Issue 30: the
 * SDK's transport reads each response through a fetch body and a pipeline of web streams (text
 * decoder, event-source parser), about 80 KiB of heap per parked call; this leg reads each response
 * with one push parser straight off the socket (sse-reader.ts), keeps one small record per open
 * exchange, and takes its connections from a keep-alive agent (http-exchange.ts).
 *
 * What it does, as the 2025-11-25 transport spec says (and as the SDK's client transport does):
 * POST each message (`Mcp-Session-Id` once the backend gave one, `Mcp-Protocol-Version` once
 * negotiated, the entry's headers, the gateway's own bearer token, `traceparent`); read the answer as
 * JSON or as an event stream; open the standalone GET stream once initialized (405: the backend has
 * none) and reopen it when it ends; resume a response stream that broke after an event id with
 * `Last-Event-ID`. Correlation (call-tags.ts): a call's id leaves the request and tags the messages of
 * its response stream; `onStreamLost` hears of a call whose stream ended before its response.
 */
import type { IncomingMessage } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, isInitializedNotification, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { traceparentOf } from '../../util/tracing.js';
import type { BackendCredentials } from './backend-credentials.js';
import { takeCallId, tagMessage } from './call-tags.js';
import { closeExchanges, createLegAgents, dropRawHead, exchange, readText, type ExchangeInit, type OpenExchanges } from './http-exchange.js';
import { readEvents, type SseEvent, type SseHandlers } from './sse-reader.js';

/**
 * Told when a call's response stream ended or broke before its response. `resumable`: the stream
 * carried event ids, so the leg resumes it (`Last-Event-ID`) and the response may still come.
 */
export type StreamLost = (callId: string, resumable: boolean) => void;

/** A JSON answer is read whole: at most this long. */
const MAX_JSON_BYTES = 64 * 1024 * 1024;
/** Of an error answer, this much is kept for the error's message. */
const ERROR_TEXT_BYTES = 4096;
/** Reconnecting a stream, as the SDK's client transport does by default: 1 s, ×1.5, at most 30 s, 2 tries. */
const RECONNECT = { initialMs: 1_000, growFactor: 1.5, maxMs: 30_000, maxRetries: 2 };

/**
 * The requests that do no harm when a backend receives them twice: they read, or set what a second
 * time sets the same. A POST of any other request (a `tools/call` above all) is not sent again after a
 * reset that may have come after the backend received it (http-exchange.ts); responses and
 * notifications are.
 */
const HARMLESS_TWICE =
  /^(initialize|ping|logging\/setLevel|completion\/complete|(tools|prompts|resources|resources\/templates|tasks)\/list|prompts\/get|resources\/(read|subscribe|unsubscribe)|tasks\/(get|result|cancel))$/;

export function harmlessTwice(message: JSONRPCMessage): boolean {
  return !('method' in message && 'id' in message) || HARMLESS_TWICE.test(message.method);
}

/** The backend answered an HTTP status the exchange cannot go on with (`code`: the status). */
export class BackendHttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'BackendHttpError';
  }
}

export interface StreamableHttpLegOptions {
  readonly url: URL;
  /** The server entry's own headers (nothing of a client's request). */
  readonly headers: Readonly<Record<string, string>>;
  readonly credentials?: BackendCredentials | undefined;
  readonly onStreamLost?: StreamLost | undefined;
}

/** Where a stream's messages go and what it was opened for. */
interface StreamRoute {
  /** The call whose response stream this is (tags its messages); undefined: the GET stream, or no call. */
  readonly callId: string | undefined;
  /** The standalone GET stream (reopened whenever it ends) rather than a response stream. */
  readonly standalone: boolean;
}

export class StreamableHttpLeg implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
  sessionId?: string | undefined;

  readonly #options: StreamableHttpLegOptions;
  readonly #agents = createLegAgents();
  readonly #open: OpenExchanges = new Set();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #closing = new AbortController();
  #protocolVersion: string | undefined;
  #started = false;
  /** The server's `retry:` (ms), which replaces the backoff when it reconnects a stream. */
  #retryMs: number | undefined;

  constructor(options: StreamableHttpLegOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('the backend leg is already started');
    this.#started = true;
  }

  setProtocolVersion(version: string): void {
    this.#protocolVersion = version;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    try {
      if (this.#closing.signal.aborted) throw new Error('Not connected');
      await this.#post(message);
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      this.onerror?.(error);
      throw error;
    }
  }

  /** Ends every open exchange and stream, and every idle connection. */
  async close(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    this.#closing.abort();
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    closeExchanges(this.#open);
    this.#agents.destroy();
    this.onclose?.();
  }

  async #post(original: JSONRPCMessage): Promise<void> {
    const { message, callId } = takeCallId(original);
    const res = await this.#exchange({
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(message),
      resendable: harmlessTwice(message),
    });
    const sessionId = res.headers['mcp-session-id'];
    if (typeof sessionId === 'string' && sessionId) this.sessionId = sessionId;
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 299) {
      const text = await readText(res, ERROR_TEXT_BYTES).catch(() => '');
      throw new BackendHttpError(status, `Error POSTing to endpoint (HTTP ${status}): ${text.slice(0, 500)}`);
    }
    if (status === 202 || !('method' in message && 'id' in message)) {
      res.resume();
      // The session is ready once its standalone stream is open (or refused): a backend request sent
      // on it right after initialization (one that belongs to no call's stream) must find it there.
      if (isInitializedNotification(message)) await this.#listen(undefined, 0);
      return;
    }
    const type = mediaType(res.headers['content-type']);
    if (type === 'text/event-stream') return this.#read(res, { callId, standalone: false });
    if (type === 'application/json') return this.#deliverJson(await readText(res, MAX_JSON_BYTES));
    res.resume();
    throw new BackendHttpError(status, `Unexpected content type: ${type || 'none'}`);
  }

  /**
   * One exchange with the backend's headers; a 401 with credentials is tried once more with a new
   * token (the old one is dropped).
   */
  async #exchange(init: ExchangeInit, retried = false): Promise<IncomingMessage> {
    const { credentials } = this.#options;
    const headers: Record<string, string> = {};
    if (this.sessionId) headers['mcp-session-id'] = this.sessionId;
    if (this.#protocolVersion) headers['mcp-protocol-version'] = this.#protocolVersion;
    Object.assign(headers, this.#options.headers, init.headers);
    const traceparent = traceparentOf();
    if (traceparent !== undefined) headers['traceparent'] = traceparent;
    const token = credentials ? await credentials.token(this.#closing.signal) : undefined;
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    const res = await exchange(this.#options.url, { ...init, headers }, this.#agents, this.#open);
    if (res.statusCode !== 401 || token === undefined || retried) return res;
    credentials!.refused(token);
    res.resume();
    return this.#exchange(init, true);
  }

  #deliverJson(text: string): void {
    const data: unknown = JSON.parse(text);
    for (const raw of Array.isArray(data) ? data : [data]) this.#deliver(raw, undefined);
  }

  /** Validates one message (the SDK's schema), tags it for its call and hands it to the client. */
  #deliver(raw: unknown, callId: string | undefined): boolean {
    const parsed = JSONRPCMessageSchema.safeParse(raw);
    if (!parsed.success) {
      this.onerror?.(new Error(`The backend sent an invalid JSON-RPC message: ${parsed.error.message.slice(0, 300)}`));
      return false;
    }
    const message = tagMessage(parsed.data, callId);
    this.onmessage?.(message);
    return !('method' in message);
  }

  /**
   * Reads an event stream to its end. A response stream that ends before its response is reported
   * (`onStreamLost`) and, when it carried event ids, resumed; the standalone stream is reopened.
   */
  #read(res: IncomingMessage, route: StreamRoute, lastEventId?: string): void {
    dropRawHead(res);
    readEvents(res, new StreamReading(this.#sink, route, lastEventId));
  }

  /** What the streams being read hand back: made once per leg, so an open stream holds no closures of its own (issue 30). */
  readonly #sink: StreamSink = {
    deliver: (raw, callId) => this.#deliver(raw, callId),
    error: (e) => this.onerror?.(e),
    retry: (ms) => (this.#retryMs = ms),
    ended: (route, eventId, answered, error) => this.#ended(route, eventId, answered, error),
  };

  #ended(route: StreamRoute, eventId: string | undefined, answered: boolean, error: Error | undefined): void {
    if (this.#closing.signal.aborted) return;
    if (error) this.onerror?.(new Error(`SSE stream disconnected: ${error.message}`));
    if (route.standalone)
      return this.#schedule(() => {
        this.#listen(eventId, 0).catch(() => undefined);
      }, 0);
    if (answered) return;
    const resumable = eventId !== undefined;
    if (route.callId !== undefined) this.#options.onStreamLost?.(route.callId, resumable);
    if (resumable) this.#schedule(() => this.#resume(route, eventId, 0), 0);
  }

  /**
   * Opens (or reopens) the standalone GET stream; a backend that answers 405 has none. Resolves once the
   * stream is open or refused (a failure is reported and tried again later); never rejects.
   */
  #listen(lastEventId: string | undefined, attempt: number): Promise<void> {
    return this.#openStream({ callId: undefined, standalone: true }, lastEventId).then(
      () => undefined,
      (e: unknown) => {
        if (this.#closing.signal.aborted) return;
        this.onerror?.(e instanceof Error ? e : new Error(String(e)));
        if (attempt + 1 < RECONNECT.maxRetries)
          this.#schedule(() => {
            this.#listen(lastEventId, attempt + 1).catch(() => undefined);
          }, attempt + 1);
      },
    );
  }

  /** Resumes a response stream after `lastEventId` on a GET, as the SDK's transport does. */
  #resume(route: StreamRoute, lastEventId: string, attempt: number): void {
    this.#openStream(route, lastEventId).catch((e: unknown) => {
      if (this.#closing.signal.aborted) return;
      this.onerror?.(e instanceof Error ? e : new Error(String(e)));
      if (attempt + 1 < RECONNECT.maxRetries) this.#schedule(() => this.#resume(route, lastEventId, attempt + 1), attempt + 1);
    });
  }

  /** GETs an event stream and reads it; false when the backend has none (405). */
  async #openStream(route: StreamRoute, lastEventId: string | undefined): Promise<boolean> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const res = await this.#exchange({ method: 'GET', headers });
    const status = res.statusCode ?? 0;
    if (status === 405) {
      res.resume();
      return false;
    }
    if (status < 200 || status > 299) {
      res.resume();
      throw new BackendHttpError(status, `Failed to open SSE stream (HTTP ${status})`);
    }
    this.#read(res, route, lastEventId);
    return true;
  }

  /** Runs `fn` after the reconnection delay for `attempt` (the server's `retry:` when it gave one). */
  #schedule(fn: () => void, attempt: number): void {
    if (this.#closing.signal.aborted) return;
    const delay = this.#retryMs ?? Math.min(RECONNECT.initialMs * RECONNECT.growFactor ** attempt, RECONNECT.maxMs);
    const t = setTimeout(() => {
      this.#timers.delete(t);
      if (!this.#closing.signal.aborted) fn();
    }, delay);
    t.unref();
    this.#timers.add(t);
  }
}

/** What a stream being read hands to its leg (see StreamableHttpLeg.#sink). */
interface StreamSink {
  /** A message for the client; true when it was a response. */
  deliver(raw: unknown, callId: string | undefined): boolean;
  error(e: Error): void;
  retry(ms: number): void;
  ended(route: StreamRoute, eventId: string | undefined, answered: boolean, error: Error | undefined): void;
}

/** One event stream being read: the last event id it carried, and whether it carried its response. */
class StreamReading implements SseHandlers {
  readonly #sink: StreamSink;
  readonly #route: StreamRoute;
  #eventId: string | undefined;
  #answered = false;

  constructor(sink: StreamSink, route: StreamRoute, lastEventId: string | undefined) {
    this.#sink = sink;
    this.#route = route;
    this.#eventId = lastEventId;
  }

  onEvent(event: SseEvent): void {
    if (event.id) this.#eventId = event.id;
    if (!event.data || (event.event && event.event !== 'message')) return;
    let raw: unknown;
    try {
      raw = JSON.parse(event.data);
    } catch {
      this.#sink.error(new Error('The backend sent an event that is not JSON'));
      return;
    }
    if (this.#sink.deliver(raw, this.#route.callId)) this.#answered = true;
  }

  onRetry(ms: number): void {
    this.#sink.retry(ms);
  }

  onEnd(error?: Error): void {
    this.#sink.ended(this.#route, this.#eventId, this.#answered, error);
  }
}

/** A Content-Type's media type, lower case, without parameters. */
function mediaType(header: string | undefined): string {
  return (header ?? '').split(';', 1)[0]!.trim().toLowerCase();
}
