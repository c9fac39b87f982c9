/**
 * How one instance sends a signed forward to another (cluster/forwarder.ts `ForwardTransport`):
 * node:http on a keep-alive agent (core/backend/http-exchange.ts), not `fetch`, whose request and
 * web-streams response cost a forwarded retry more CPU than the rest of its hop (issue 30). A JSON
 * answer is read whole and handed on as text (the forwarding end then has nothing to wait for: its
 * books close at once); any other answer (an SSE stream) is streamed back as it comes.
 */
import type { ClientRequest, IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { ForwardAnswer, ForwardTransport } from '../cluster/forwarder.js';
import { closeExchanges, createLegAgents, exchange, readText } from '../core/backend/http-exchange.js';
import { neverSent } from '../core/backend/exchange-failure.js';
import { errorAnswerFor } from '../cluster/forward-answer.js';

/** The longest JSON answer an owner may send back (far beyond any MCP result; a stream is not bounded). */
const MAX_JSON_BYTES = 64 * 1024 * 1024;
/**
 * How long a connection to the owner may take to open (undici's connect deadline was 10 s): an owner
 * that cannot be reached fails the forward then, and the request is served here. The answer is not
 * timed: the owner answers a call when it ends.
 */
const CONNECT_MS = 10_000;
/** Statuses whose response has no body (the Response constructor refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

export interface NodeForwardTransport {
  readonly send: ForwardTransport;
  /** Ends every forward in flight and closes every connection. */
  close(): void;
}

/** Whether a forwarded answer came back whole from this transport (a JSON answer: read as text). */
export const cameBackWhole = (res: Response): boolean => isJson(res.headers);

const isJson = (headers: ForwardAnswer['headers']): boolean => (headers.get('content-type') ?? '').toLowerCase().includes('application/json');

/**
 * The transport. A forward that never reached the owner (no connection within CONNECT_MS, refused,
 * no route) rejects: the forwarder serves the request here. Once sent, it never does: an answer lost
 * on the way (the owner died, the connection broke, a JSON answer too long) is told the client as a
 * -32603 `forward_cut` under its request's id, and `onCut` hears of it; a client that left ends it.
 */
export function createNodeForwardTransport(onCut: (error: Error) => void): NodeForwardTransport {
  const agents = createLegAgents();
  const open = new Set<ClientRequest>();
  /** Set by close(): a forward it ended, before or after its answer's head, is answered gateway_closing. */
  let closing = false;
  return {
    async send(url, { method, headers, body, signal }): Promise<ForwardAnswer> {
      let res;
      try {
        // A forward may go out again after a reset on a reused connection: the owner refuses a copy of
        // one it received (a replay, marked), and its client is told the answer was cut.
        const init = { method: method as 'GET' | 'POST' | 'DELETE', headers, body, signal, connectMs: CONNECT_MS, resendable: true };
        res = await exchange(url, init, agents, open);
      } catch (e) {
        // Never sent (or the client left): the forwarder serves it here, or ends. Sent, the owner may have
        // run it: the client is told its answer was cut, and it is never served a second time.
        if (signal.aborted || neverSent(e)) throw e;
        // This instance is closing (its drain's deadline passed): the call goes with it, as its own calls do.
        if (closing) return errorAnswerFor(body, 'gateway_closing');
        return cut(e, body, onCut);
      }
      const status = res.statusCode ?? 502;
      const out = headersOf(res.headers);
      if (NO_BODY.has(status)) {
        res.resume();
        return { status, headers: out, body: null };
      }
      if (isJson(out)) {
        try {
          return { status, headers: out, body: await readText(res, MAX_JSON_BYTES) };
        } catch (e) {
          if (signal.aborted) throw e; // the client left: nobody to tell
          if (closing) return errorAnswerFor(body, 'gateway_closing');
          return cut(e, body, onCut);
        }
      }
      return { status, headers: out, body: Readable.toWeb(res) as ReadableStream<Uint8Array> };
    },
    close() {
      closing = true;
      closeExchanges(open);
      agents.destroy();
    },
  };
}

/** A response head's headers as the forwarder reads them (by lower-case name; a repeated one joined as fetch joins it). */
function headersOf(head: IncomingHttpHeaders): ForwardAnswer['headers'] {
  return {
    get(name) {
      const v = head[name];
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : String(v);
    },
  };
}

/** The answer to a forward the owner may have served but whose answer was lost: -32603 `forward_cut`, under the request's id. */
function cut(error: unknown, body: string | undefined, onCut: (error: Error) => void): ForwardAnswer {
  onCut(error instanceof Error ? error : new Error(String(error)));
  return errorAnswerFor(body, 'forward_cut');
}
