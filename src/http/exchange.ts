/**
 * One request/response exchange on the 2026-07-28 endpoint (transports/streamable-http.mdx).
 *
 * The reply is `application/json` unless a related notification (progress, log) is ready before the
 * result and the client accepts `text/event-stream`; then it becomes an SSE stream scoped to this
 * request, ending with the response. Closing the stream (or the connection) aborts `signal`, which
 * the caller treats as cancellation. Long streams get comment keep-alives.
 */
import { toWireError, type WireErrorObject } from '../errors.js';
import type { OutboundNotification } from '../fronts/dialect.js';
import type { RequestId } from '../protocol/rev-2026-07-28/envelope.js';
import { headersForStatus, httpStatusFor } from './status.js';
import { KEEPALIVE_MS, SSE_HEADERS, SSE_KEEPALIVE, sseEvent } from './sse.js';
import { sseQueue, supersedingKey } from '../util/sse-queue.js';
import { background } from '../util/background.js';

export type ExchangeOutcome = { ok: true; result: Record<string, unknown> } | { ok: false; error: WireErrorObject };

export function jsonRpcResponse(id: RequestId | null, outcome: ExchangeOutcome): Record<string, unknown> {
  return outcome.ok ? { jsonrpc: '2.0', id, result: outcome.result } : { jsonrpc: '2.0', id, error: outcome.error };
}

/** A JSON answer as made here: its status, headers and text, kept on its Response (`jsonAnswerOf`). */
export interface JsonAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

const JSON_ANSWER = Symbol('json answer');

export function jsonResponse(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  const answer: JsonAnswer = { status, headers: { 'content-type': 'application/json', ...headers }, text: JSON.stringify(body) };
  const res = new Response(answer.text, { status, headers: answer.headers });
  (res as Response & { [JSON_ANSWER]?: JsonAnswer })[JSON_ANSWER] = answer;
  return res;
}

/**
 * What `jsonResponse` made `res` of, when it did: a channel between instances sends it on as it is
 * (gateway/channel-server.ts), without reading the Response (on Node, a body read makes the web
 * Response and streams a lightweight one stands in for). Headers set on the Response after it was
 * made (CORS, the internal path's) are not in it: it is for an answer passed on as it was made.
 */
export function jsonAnswerOf(res: Response): JsonAnswer | undefined {
  return (res as Response & { [JSON_ANSWER]?: JsonAnswer })[JSON_ANSWER];
}

/** `work`'s outcome; never rejects. */
function settle(work: Promise<Record<string, unknown>>): Promise<ExchangeOutcome> {
  return work.then(
    (result) => ({ ok: true, result }),
    (e: unknown) => ({ ok: false, error: toWireError(e) }),
  );
}

export class Exchange {
  readonly #id: RequestId;
  readonly #sse: boolean;
  readonly #sseOnly: boolean;
  readonly #abort: { abort(reason: unknown): void };
  #buffer: OutboundNotification[] = [];
  #write: ((n: OutboundNotification) => void) | undefined;
  #firstNotification: (() => void) | undefined;

  /**
   * @param sse whether the client accepts an SSE reply
   * @param sseOnly the client accepts SSE but not JSON: always stream
   * @param abort ended when the client goes away (its answer's lifeline)
   */
  constructor(id: RequestId, sse: boolean, sseOnly: boolean, abort: { abort(reason: unknown): void }) {
    this.#id = id;
    this.#sse = sse;
    this.#sseOnly = sseOnly;
    this.#abort = abort;
  }

  /** Where the call's notifications go; undefined when the client cannot receive them. */
  get sink(): ((n: OutboundNotification) => void) | undefined {
    if (!this.#sse) return undefined;
    return (n) => {
      if (this.#write) this.#write(n);
      else {
        this.#buffer.push(n);
        this.#firstNotification?.();
      }
    };
  }

  /**
   * Builds the HTTP response for `work`: JSON once it settles, or an SSE stream as soon as a
   * notification comes first (one promise decides which: no race of two, issue 30).
   */
  respond(work: Promise<Record<string, unknown>>): Promise<Response> {
    if (this.#sseOnly) return Promise.resolve(this.#stream(settle(work)));
    return new Promise<Response>((resolve, reject) => {
      let decided = false;
      // The first of the two decides; an answer that cannot be built rejects the response (a 500).
      const decide = (build: () => Response): void => {
        if (decided) return;
        decided = true;
        this.#firstNotification = undefined;
        try {
          resolve(build());
        } catch (e) {
          reject(e);
        }
      };
      // The outcome as a promise of its own only when the answer becomes a stream.
      this.#firstNotification = () => decide(() => this.#stream(settle(work)));
      work.then(
        (result) => decide(() => this.#json({ ok: true, result })),
        (e: unknown) => decide(() => this.#json({ ok: false, error: toWireError(e) })),
      );
    });
  }

  #json(outcome: ExchangeOutcome): Response {
    const status = outcome.ok ? 200 : httpStatusFor(outcome.error);
    return jsonResponse(jsonRpcResponse(this.#id, outcome), status, outcome.ok ? {} : headersForStatus(status, outcome.error));
  }

  #stream(settled: Promise<ExchangeOutcome>): Response {
    let keepalive: ReturnType<typeof setInterval> | undefined;
    // Notifications are queued only while the client reads (sse-queue.ts): a later progress of the
    // same token stands for an earlier one, and what has no successor is dropped; the answer always goes.
    const queue = sseQueue({
      start: (q) => {
        this.#write = (n) => q.may(sseEvent({ jsonrpc: '2.0', method: n.method, params: n.params }), supersedingKey(n));
        for (const n of this.#buffer.splice(0)) this.#write(n);
        keepalive = setInterval(() => q.may(SSE_KEEPALIVE, 'keep-alive'), KEEPALIVE_MS);
        keepalive.unref?.();
        background(
          'write the answer on an SSE reply',
          settled.then((outcome) => {
            this.#write = () => undefined;
            clearInterval(keepalive);
            q.must(sseEvent(jsonRpcResponse(this.#id, outcome)));
            q.close();
          }),
        );
      },
      cancel: () => {
        clearInterval(keepalive);
        this.#write = () => undefined;
        this.#abort.abort(new Error('client closed the stream'));
      },
    });
    return new Response(queue.stream, { status: 200, headers: SSE_HEADERS });
  }
}
