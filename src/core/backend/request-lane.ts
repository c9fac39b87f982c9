/**
 * A legacy backend session's own requests (`tools/call`, lists, `ping`, tasks): sent and matched to
 * their responses here, not by the v1 SDK's `Protocol.request` (issue 30). The SDK keeps the
 * handshake (`initialize`) and the backend's notifications (its requests for input:
 * backend-requests.ts); this lane keeps only what one request of ours needs — an id, the caller's
 * signal, a deadline — in one record, and the response reaches it before the SDK's dispatch. Per
 * response the SDK ran its message guards three times and the result schema once, all with zod, on a
 * message the transport had already checked with the SDK's own schema (json-rpc-lines.ts,
 * streamable-http-leg.ts, the SDK's transports), and each request needed a signal of its own
 * (request-signal.ts) because the SDK never removes its abort listener.
 *
 * What the caller sees is what the SDK's `request` gave: the result object; an error response as the
 * SDK's `McpError` (`McpError.fromError`, as the SDK builds it); on its deadline `-32001` with
 * `data.timeout` and a `notifications/cancelled` to the backend; on abort a `notifications/cancelled`
 * and an `McpError(-32001)` carrying the reason (the reason itself when it is one); `Not connected`
 * when the transport is gone; `-32000 Connection closed` for every request pending when it closes.
 * Ids come from the SDK's own counter, so the handshake's requests and ours never share one.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { CancelSource } from './port.js';
import { tapTransport } from './transport-tap.js';

export interface LaneRequestOptions {
  /** Aborting it cancels the request: `notifications/cancelled` goes to the backend. None: only the deadline ends it. */
  readonly signal?: CancelSource | undefined;
  /** The request's deadline (then `-32001` with `data.timeout`, and the backend is told to cancel). */
  readonly timeoutMs: number;
}

/** Where the lane takes its request ids: the SDK client's own counter (see `sdkIds`). */
export type NextId = () => number;

/**
 * The v1 SDK client's request id counter, shared so the lane's ids and the handshake's are never the
 * same (the SDK numbers its requests from 0 in `_requestMessageId`, not part of its typed surface;
 * the SDK version is pinned, and test/core/backend/request-lane.test.ts fails if the field goes).
 */
export function sdkIds(client: object): NextId {
  const counter = client as { _requestMessageId?: unknown };
  if (typeof counter._requestMessageId !== 'number') throw new Error('the SDK client has no request id counter (_requestMessageId)');
  return () => (counter as { _requestMessageId: number })._requestMessageId++;
}

/**
 * One request in flight: its promise, its own abort listener on the caller's signal (`handleEvent`:
 * no closure, no signal of its own), its timer. Settled once, by its response, its deadline, an abort,
 * the transport closing, or `abort`.
 */
export class PendingRequest {
  readonly promise: Promise<Record<string, unknown>>;
  timer: NodeJS.Timeout | undefined;
  resolve!: (result: Record<string, unknown>) => void;
  reject!: (error: unknown) => void;
  readonly #lane: RequestLane;

  constructor(
    lane: RequestLane,
    readonly id: number,
    readonly signal: CancelSource | undefined,
  ) {
    this.#lane = lane;
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.#lane.cancel(this, this.signal?.reason);
  }

  /** Fails the request with `error` itself (the session's own verdict, say its response stream broke) and tells the backend to cancel it. */
  abort(error: Error): void {
    this.#lane.cancel(this, error, true);
  }
}

export class RequestLane {
  readonly #transport: Transport;
  readonly #nextId: NextId;
  readonly #pending = new Map<number, PendingRequest>();
  readonly #onError: (error: Error) => void;
  #closed = false;

  /**
   * Takes the responses to its requests off `transport` (connected: the SDK's handlers are set);
   * everything else goes on to the handler that was there. `onError`: a cancellation that could not be sent.
   */
  constructor(transport: Transport, nextId: NextId, onError: (error: Error) => void) {
    this.#transport = transport;
    this.#nextId = nextId;
    this.#onError = onError;
    // Not connected from here on, also for what the close handlers send (as the SDK, which lets go of
    // its transport before it runs them); what is in flight fails once they ran, as the SDK's does.
    tapTransport(transport, {
      take: (message) => this.#take(message),
      closing: () => (this.#closed = true),
      closed: () => this.#failPending(),
    });
  }

  /** Sends `method`; its `promise` resolves with the backend's result (see the file's header for the errors). */
  send(method: string, params: Record<string, unknown> | undefined, options: LaneRequestOptions): PendingRequest {
    const { signal } = options;
    const pending = new PendingRequest(this, this.#closed || signal?.aborted ? -1 : this.#nextId(), signal);
    if (this.#closed) pending.reject(new Error('Not connected'));
    else if (signal?.aborted) pending.reject(signal.reason);
    if (pending.id < 0) return pending;
    this.#pending.set(pending.id, pending);
    signal?.addEventListener('abort', pending, { once: true });
    pending.timer = setTimeout(() => this.#expire(pending, options.timeoutMs), options.timeoutMs);
    pending.timer.unref();
    const id = pending.id;
    const message = (params ? { jsonrpc: '2.0', id, method, params } : { jsonrpc: '2.0', id, method }) as JSONRPCMessage;
    this.#transport.send(message).catch((e: unknown) => {
      if (this.#settle(pending)) pending.reject(e);
    });
    return pending;
  }

  /** `send(...).promise`. */
  request(method: string, params: Record<string, unknown> | undefined, options: LaneRequestOptions): Promise<Record<string, unknown>> {
    return this.send(method, params, options).promise;
  }

  /**
   * Ends `pending` with `reason` and tells the backend to stop (as the SDK's request does): the caller
   * gets the reason as an `McpError` (`-32001` unless it is one), or, `asIs`, the reason itself.
   */
  cancel(pending: PendingRequest, reason: unknown, asIs = false): void {
    if (!this.#settle(pending)) return;
    const notice = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: pending.id, reason: String(reason) } } as JSONRPCMessage;
    this.#transport.send(notice).catch((e: unknown) => this.#onError(new Error(`Failed to send cancellation: ${String(e)}`)));
    pending.reject(asIs || reason instanceof McpError ? reason : new McpError(ErrorCode.RequestTimeout, String(reason)));
  }

  #expire(pending: PendingRequest, timeoutMs: number): void {
    this.cancel(pending, McpError.fromError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: timeoutMs }));
  }

  /** Requests in flight (for tests and diagnostics). */
  get size(): number {
    return this.#pending.size;
  }

  /** A response to one of ours settles it (true); anything else is not the lane's (false). */
  #take(message: JSONRPCMessage): boolean {
    if ('method' in message || !('id' in message)) return false;
    // As the SDK reads it: an id echoed as a string ("3") is the number it was sent as.
    const pending = this.#pending.get(Number(message.id));
    if (!pending || !this.#settle(pending)) return false;
    if ('result' in message) pending.resolve(message.result as Record<string, unknown>);
    else {
      const { code, message: text, data } = (message as { error: { code: number; message: string; data?: unknown } }).error;
      pending.reject(McpError.fromError(code, text, data));
    }
    return true;
  }

  /** Takes `pending` out of the lane (its listener, its timer); false when it already was. */
  #settle(pending: PendingRequest): boolean {
    if (this.#pending.get(pending.id) !== pending) return false;
    this.#pending.delete(pending.id);
    clearTimeout(pending.timer);
    pending.signal?.removeEventListener('abort', pending);
    return true;
  }

  /** The transport closed: every request in flight fails as the SDK fails its own. */
  #failPending(): void {
    const error = McpError.fromError(ErrorCode.ConnectionClosed, 'Connection closed');
    for (const pending of [...this.#pending.values()]) {
      this.#settle(pending);
      pending.reject(error);
    }
  }
}
