/**
 * How one instance sends a signed forward to another (cluster/forwarder.ts `ForwardTransport`):
 * node:http on a keep-alive agent (core/backend/http-exchange.ts), not `fetch`, whose request and
 * web-streams response cost a forwarded retry more CPU than the rest of its hop (issue 30). A JSON
 * answer is read whole and handed on as text (the forwarding end then has nothing to wait for: its
 * books close at once); any other answer (an SSE stream) is streamed back as it comes.
 */
import type { ClientRequest } from 'node:http';
import { Readable } from 'node:stream';
import type { ForwardAnswer, ForwardTransport } from '../cluster/forwarder.js';
import { createLegAgents, exchange, readText } from '../core/backend/http-exchange.js';
import { GatewayError, httpStatusOfReason, toWireError } from '../errors.js';

/** The longest JSON answer an owner may send back (far beyond any MCP result; a stream is not bounded). */
const MAX_JSON_BYTES = 64 * 1024 * 1024;
/**
 * How long the owner has to answer a forward's head (undici's connect deadline was 10 s): an owner
 * that cannot be reached fails the forward then, and the request is served here.
 */
const HEAD_MS = 10_000;
/** What the client gets when the owner's JSON answer was cut after its head: never a second serve here. */
const CUT = JSON.stringify({ jsonrpc: '2.0', id: null, error: toWireError(new GatewayError('forward_cut')) });
/** Statuses whose response has no body (the Response constructor refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

export interface NodeForwardTransport {
  readonly send: ForwardTransport;
  /** Ends every forward in flight and closes every connection. */
  close(): void;
}

/** Whether a forwarded answer came back whole from this transport (a JSON answer: read as text). */
export const cameBackWhole = (res: Response): boolean => isJson(res.headers);

const isJson = (headers: Headers): boolean => (headers.get('content-type') ?? '').toLowerCase().includes('application/json');

/**
 * The transport. Before the owner's answer head it rejects (unreachable: the forwarder serves the
 * request here); after it, never: a JSON answer cut on the way (the owner died, the client left, the
 * answer was too long) is told the client as a -32603 `forward_cut`, and `onCut` hears of it.
 */
export function createNodeForwardTransport(onCut: (error: Error) => void): NodeForwardTransport {
  const agents = createLegAgents();
  const open = new Set<ClientRequest>();
  return {
    async send(url, { method, headers, body, signal }): Promise<ForwardAnswer> {
      const flat: Record<string, string> = {};
      headers.forEach((value, name) => (flat[name] = value));
      const head = new AbortController();
      const late = setTimeout(() => head.abort(new Error(`no answer from ${url.host} within ${HEAD_MS} ms`)), HEAD_MS);
      late.unref();
      const exchanged = exchange(
        url,
        { method: method as 'GET' | 'POST' | 'DELETE', headers: flat, body, signal: AbortSignal.any([signal, head.signal]) },
        agents,
        open,
      );
      const res = await exchanged.finally(() => clearTimeout(late));
      const status = res.statusCode ?? 502;
      const out = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        if (typeof value === 'string') out.set(name, value);
        else if (Array.isArray(value)) for (const v of value) out.append(name, v);
      }
      if (NO_BODY.has(status)) {
        res.resume();
        return { status, headers: out, body: null };
      }
      if (isJson(out)) {
        const text = await readText(res, MAX_JSON_BYTES).catch((e: unknown) => {
          onCut(e instanceof Error ? e : new Error(String(e)));
          return undefined;
        });
        return text === undefined
          ? { status: httpStatusOfReason('forward_cut') ?? 200, headers: jsonHeaders(), body: CUT }
          : { status, headers: out, body: text };
      }
      return { status, headers: out, body: Readable.toWeb(res) as ReadableStream<Uint8Array> };
    },
    close() {
      for (const req of open) req.destroy();
      agents.destroy();
    },
  };
}

function jsonHeaders(): Headers {
  return new Headers({ 'content-type': 'application/json' });
}
