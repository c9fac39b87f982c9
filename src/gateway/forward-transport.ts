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

/** The longest JSON answer an owner may send back (far beyond any MCP result; a stream is not bounded). */
const MAX_JSON_BYTES = 64 * 1024 * 1024;
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

export function createNodeForwardTransport(): NodeForwardTransport {
  const agents = createLegAgents();
  const open = new Set<ClientRequest>();
  return {
    async send(url, { method, headers, body, signal }): Promise<ForwardAnswer> {
      const flat: Record<string, string> = {};
      headers.forEach((value, name) => (flat[name] = value));
      const res = await exchange(url, { method: method as 'GET' | 'POST' | 'DELETE', headers: flat, body, signal }, agents, open);
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
      if (isJson(out)) return { status, headers: out, body: await readText(res, MAX_JSON_BYTES) };
      return { status, headers: out, body: Readable.toWeb(res) as ReadableStream<Uint8Array> };
    },
    close() {
      for (const req of open) req.destroy();
      agents.destroy();
    },
  };
}
