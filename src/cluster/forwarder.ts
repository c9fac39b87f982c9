/**
 * Forwarding a request to the instance that must serve it (cluster mode): the request goes to that
 * instance's internal URL on `INTERNAL_PATH` with its own method (POST, or GET/DELETE for a legacy
 * session), signed with the cluster secret (HMAC-SHA256 over the time, the method, the public path with
 * its query, the body — empty for GET/DELETE — and the caller's Authorization and Mcp-Session-Id, so a
 * captured signature is good for nothing else), and its answer — JSON or an SSE stream, progress
 * included — is passed back as it comes. Aborting the incoming request (its client went away) aborts
 * the forwarded one. A request on the internal path without a valid, fresh signature is refused, so
 * nothing but another instance can use it.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const INTERNAL_PATH = '/_cluster/forward';
const SIGNATURE = 'x-mcpgw-signature';
const AT = 'x-mcpgw-at';
const FOR_PATH = 'x-mcpgw-path';
/** How old a signature may be (clock skew between instances included). */
const MAX_AGE_MS = 30_000;
/** The request headers that travel with a forwarded request. */
const PASSED = ['content-type', 'accept', 'authorization', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id', 'last-event-id'];
/** The response headers that travel back. */
const RETURNED = ['content-type', 'cache-control', 'retry-after', 'www-authenticate', 'mcp-session-id', 'allow'];
/** The methods that are forwarded; only POST has a body. */
const METHODS = new Set(['POST', 'GET', 'DELETE']);

export interface ForwarderDeps {
  readonly secret: string;
  /** The internal URLs of the live instances. */
  readonly urlOf: (instanceId: string) => Promise<string | undefined>;
  readonly now?: () => number;
}

/** What a verified forwarded request is for: the public path and its query (the method is the request's own). */
export interface ForwardedFor {
  readonly path: string;
  readonly query: URLSearchParams;
}

/** The headers a signature covers besides the method, target and body: who asks, and for which session. */
const SIGNED_HEADERS = ['authorization', 'mcp-session-id'];

function sign(secret: string, at: string, method: string, target: string, body: string, headers: Headers): string {
  const digest = createHash('sha256').update(body).digest('hex');
  const signed = SIGNED_HEADERS.map((h) =>
    createHash('sha256')
      .update(headers.get(h) ?? '')
      .digest('hex'),
  );
  return createHmac('sha256', secret)
    .update([at, method, target, digest, ...signed].join('\n'))
    .digest('hex');
}

export function createForwarder(deps: ForwarderDeps) {
  const now = deps.now ?? Date.now;
  return {
    internalPath: INTERNAL_PATH,

    /**
     * Sends `req` (POST, GET or DELETE) to `owner`, for the public `target` (path and query, e.g.
     * `/messages?sessionId=…`); `body` is the POST body as read (ignored for GET/DELETE, which carry
     * none). The owner's answer, streamed; undefined when the owner has no URL or cannot be reached.
     * The forwarded request is aborted with `req.signal`.
     */
    async send(owner: string, target: string, req: Request, body = ''): Promise<Response | undefined> {
      const method = req.method.toUpperCase();
      if (!METHODS.has(method)) return undefined;
      const payload = method === 'POST' ? body : '';
      const base = await deps.urlOf(owner);
      if (!base) return undefined;
      const headers = new Headers();
      for (const name of PASSED) {
        const v = req.headers.get(name);
        if (v !== null) headers.set(name, v);
      }
      req.headers.forEach((v, name) => {
        if (name.startsWith('mcp-param-')) headers.set(name, v);
      });
      const at = String(now());
      headers.set(AT, at);
      headers.set(FOR_PATH, target);
      headers.set(SIGNATURE, sign(deps.secret, at, method, target, payload, headers));
      let res: Response;
      try {
        const init: RequestInit = { method, headers, signal: req.signal };
        if (method === 'POST') init.body = payload;
        res = await fetch(new URL(INTERNAL_PATH, base), init);
      } catch {
        return undefined; // unreachable: served here, where the client is told what it can be told
      }
      const out = new Headers();
      for (const name of RETURNED) {
        const v = res.headers.get(name);
        if (v !== null) out.set(name, v);
      }
      return new Response(res.body, { status: res.status, headers: out });
    },

    /**
     * What a request on the internal path was forwarded for, when it carries a fresh signature of this
     * cluster over its method, target and `body` (the empty string for GET/DELETE); undefined otherwise.
     */
    verify(req: Request, body: string): ForwardedFor | undefined {
      const method = req.method.toUpperCase();
      const at = req.headers.get(AT);
      const target = req.headers.get(FOR_PATH);
      const given = req.headers.get(SIGNATURE);
      if (!METHODS.has(method) || at === null || target === null || given === null || !/^\d+$/.test(at) || !target.startsWith('/')) return undefined;
      if (Math.abs(now() - Number(at)) > MAX_AGE_MS) return undefined;
      const expected = Buffer.from(sign(deps.secret, at, method, target, method === 'POST' ? body : '', req.headers), 'hex');
      const actual = Buffer.from(given, 'hex');
      if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return undefined;
      const q = target.indexOf('?');
      return q < 0 ? { path: target, query: new URLSearchParams() } : { path: target.slice(0, q), query: new URLSearchParams(target.slice(q + 1)) };
    },
  };
}
