/**
 * A legacy backend session's requests for input (`elicitation/create`, `sampling/createMessage`,
 * `roots/list`), taken off the transport before the v1 SDK's dispatch and answered here (issue 30),
 * as request-lane.ts does for the session's own requests. Per request the SDK ran its message guards
 * with zod, made an AbortController, an `extra` of eleven fields with two closures, and a chain of five
 * promises that a parked call held until its client answered; here a request is a lifeline
 * (util/lifeline.ts) in one map and one reaction to the answer.
 *
 * What the backend sees is what the SDK sent: the handler's result as `result`; a rejection as an
 * error with its `code` when that is an integer (else `-32603`), its `message` (else `Internal
 * error`) and its `data` when it has one; nothing for a request the backend cancelled
 * (`notifications/cancelled` ends its lifeline with the notice's reason). When the transport closes,
 * every request still open ends, with no reason of its own (an `AbortError`), as the SDK aborts its
 * handlers', even when a close handler before it throws. Every other message goes on to the SDK: the
 * backend's other requests (`ping`, or one the gateway refuses), a request for input that asks to be
 * run as a task (`params.task`: the SDK refuses it, the session's client declaring no tasks), and
 * cancellations of requests that are not these. One difference: a cancellation of request `0` (a v1
 * SDK server's first) ends it; the SDK's handler ignored a falsy `requestId`.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Lifeline } from '../../util/lifeline.js';
import { tapTransport } from './transport-tap.js';

/** Answers one request: its result, or a rejection the backend gets as an error. `cancel` ends if the backend withdraws it or the transport closes. */
export type BackendRequestHandler = (method: string, params: Record<string, unknown> | undefined, cancel: Lifeline) => Promise<Record<string, unknown>>;

type RequestId = string | number;

export class BackendRequests {
  readonly #transport: Transport;
  readonly #methods: ReadonlySet<string>;
  readonly #handler: BackendRequestHandler;
  readonly #onError: (error: Error) => void;
  /** Requests not yet answered, by the id the backend gave them. */
  readonly #open = new Map<RequestId, Lifeline>();

  /**
   * Takes the backend's requests whose method is one of `methods`, and their cancellations, off
   * `transport` (connected: the SDK's handlers are set); everything else goes on to the handler that
   * was there. `onError`: a response that could not be sent.
   */
  constructor(transport: Transport, methods: ReadonlySet<string>, handler: BackendRequestHandler, onError: (error: Error) => void) {
    this.#transport = transport;
    this.#methods = methods;
    this.#handler = handler;
    this.#onError = onError;
    // After the handlers that were there: the session knows it lost its transport before its requests end.
    tapTransport(transport, { take: (message) => this.#take(message), closed: () => this.#endAll() });
  }

  /** Requests not yet answered (for tests and diagnostics). */
  get size(): number {
    return this.#open.size;
  }

  /** One of the backend's requests for input, or a cancellation of one: served here (true); anything else is not (false). */
  #take(message: JSONRPCMessage): boolean {
    if (!('method' in message)) return false;
    if ('id' in message) {
      if (!this.#methods.has(message.method) || (message.params as { task?: unknown } | undefined)?.task !== undefined) return false;
      this.#serve(message.id, message.method, message.params as Record<string, unknown> | undefined);
      return true;
    }
    if (message.method !== 'notifications/cancelled') return false;
    const params = message.params as { requestId?: unknown; reason?: unknown } | undefined;
    const id = params?.requestId;
    const open = typeof id === 'string' || typeof id === 'number' ? this.#open.get(id) : undefined;
    if (!open) return false;
    this.#open.delete(id as RequestId);
    open.abort(params?.reason);
    return true;
  }

  #serve(id: RequestId, method: string, params: Record<string, unknown> | undefined): void {
    const cancel = new Lifeline();
    this.#open.set(id, cancel);
    let answer: Promise<Record<string, unknown>>;
    try {
      answer = this.#handler(method, params, cancel);
    } catch (e) {
      answer = Promise.reject(e);
    }
    answer.then(
      (result) => this.#reply(id, cancel, { jsonrpc: '2.0', id, result } as JSONRPCMessage),
      (e: unknown) => this.#reply(id, cancel, { jsonrpc: '2.0', id, error: errorOf(e) } as JSONRPCMessage),
    );
  }

  /** Sends the answer to a request, unless the backend withdrew it or the transport closed meanwhile. */
  #reply(id: RequestId, cancel: Lifeline, response: JSONRPCMessage): void {
    if (this.#open.get(id) === cancel) this.#open.delete(id);
    if (cancel.aborted) return;
    this.#transport.send(response).catch((e: unknown) => this.#onError(new Error(`Failed to send response: ${String(e)}`)));
  }

  /** The transport closed: every request still open ends. */
  #endAll(): void {
    const open = [...this.#open.values()];
    this.#open.clear();
    for (const cancel of open) cancel.abort();
  }
}

/** A rejection as the SDK answers it: its integer `code` (else `-32603`), its message (else `Internal error`), its `data` when set. */
function errorOf(e: unknown): { code: number; message: string; data?: unknown } {
  const err = (e ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  const code = Number.isSafeInteger(err.code) ? (err.code as number) : ErrorCode.InternalError;
  const message = typeof err.message === 'string' ? err.message : 'Internal error';
  return err.data !== undefined ? { code, message, data: err.data } : { code, message };
}
