/**
 * A forward's answer made where it was sent from, for a request whose owner's answer cannot be passed
 * on: a JSON-RPC error in the wire form under the id of the request the forward carried (a client
 * matches its answer by id). The forward transport tells `forward_cut` (sent, then the answer was
 * lost: it may have run) and `gateway_closing` (this instance closed with it on its way); the
 * forwarder tells `forward_cut` of a forward its owner refused as a replay, since an earlier copy of
 * it reached the owner (a connection reset after the request went out, and the request sent again).
 */
import { GatewayError, httpStatusOfReason, toWireError } from '../errors.js';

export interface ErrorAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/** `code` as the error answer to the request `body` carried. */
export function errorAnswerFor(body: string | undefined, code: 'forward_cut' | 'gateway_closing'): ErrorAnswer {
  const reply = { jsonrpc: '2.0', id: requestIdOf(body), error: toWireError(new GatewayError(code)) };
  return { status: httpStatusOfReason(code) ?? 200, headers: new Headers({ 'content-type': 'application/json' }), body: JSON.stringify(reply) };
}

/** The same as a web `Response` (what the forwarder hands on). */
export function errorResponseFor(body: string | undefined, code: 'forward_cut' | 'gateway_closing'): Response {
  const answer = errorAnswerFor(body, code);
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

/** The id of the JSON-RPC request a forward carried (null when it had none: a client then cannot match it anyway). */
function requestIdOf(body: string | undefined): string | number | null {
  try {
    const id = (JSON.parse(body ?? '') as { id?: unknown } | null)?.id;
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}
