/**
 * Forwarding a request to the instance that must serve it (cluster mode): the request goes to that
 * instance's internal URL on `INTERNAL_PATH` with its own method (POST, or GET/DELETE for a legacy
 * session), signed with the cluster secret (HMAC-SHA256 over the time, the method, the public path with
 * its query, the body — empty for GET/DELETE — the caller's Authorization and Mcp-Session-Id, and a
 * fresh random nonce, so a captured signature is good for nothing else; and the `traceparent` the
 * owner's span joins, when tracing is on), and its answer — JSON or an
 * SSE stream, progress included — is passed back as it comes. Aborting the incoming request (its client
 * went away) aborts the forwarded one. A request on the internal path without a valid, fresh signature
 * is refused, so nothing but another instance can use it; and each signed request is served once: its
 * nonce is accepted once across the cluster (`Nonces`, Redis `SET NX` for the signature's lifetime), so
 * a captured request replayed within those 30 s is refused too. The signature also names the instance
 * the request is for, so a captured request is good at that instance only; each instance remembers the
 * nonces it accepted itself, so while Redis is away a forward is still accepted once (a retry that must
 * reach its call's owner goes on through an outage) and a replay to it is still refused. A verifier
 * that is not told its own id cannot rely on that binding: without the store it refuses with
 * `cluster_unavailable` (retryable), never serves on trust.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../errors.js';
import { type Result, err, ok } from '../util/result.js';
import { InMemoryNonces, type Nonces } from './nonces.js';

export const INTERNAL_PATH = '/_cluster/forward';
const SIGNATURE = 'x-mcpgw-signature';
const AT = 'x-mcpgw-at';
const FOR_PATH = 'x-mcpgw-path';
const NONCE = 'x-mcpgw-nonce';
const FOR_INSTANCE = 'x-mcpgw-for';
/** How old a signature may be (clock skew between instances included). */
const MAX_AGE_MS = 30_000;
/** The request headers that travel with a forwarded request. */
const PASSED = ['content-type', 'accept', 'authorization', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id', 'last-event-id', 'traceparent'];
/** The response headers that travel back. */
const RETURNED = ['content-type', 'cache-control', 'retry-after', 'www-authenticate', 'mcp-session-id', 'allow'];
/** The methods that are forwarded; only POST has a body. */
const METHODS = new Set(['POST', 'GET', 'DELETE']);

/**
 * How a signed forward goes out and its answer comes back (the answer's body streamed as it comes).
 * Rejects when the owner cannot be reached. The default is `fetch`; the Node gateway gives its own
 * (node:http on a keep-alive agent: gateway/forward-transport.ts).
 */
export type ForwardTransport = (url: URL, init: { method: string; headers: Headers; body: string | undefined; signal: AbortSignal }) => Promise<ForwardAnswer>;

/** The owner's answer: its body streamed, or already read whole (a string), or none. */
export interface ForwardAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | string | null;
}

const fetchTransport: ForwardTransport = async (url, { method, headers, body, signal }) => {
  const res = await fetch(url, body === undefined ? { method, headers, signal } : { method, headers, body, signal });
  return { status: res.status, headers: res.headers, body: res.body };
};

/** What `send` reads of the request it forwards (a `Request` is one). */
export interface ForwardSource {
  readonly method: string;
  readonly headers: Pick<Headers, 'get' | 'forEach'>;
  readonly signal: AbortSignal;
}

export interface ForwarderDeps {
  readonly secret: string;
  /** How forwards are sent (default: `fetch`). */
  readonly transport?: ForwardTransport | undefined;
  /** The internal URLs of the live instances. */
  readonly urlOf: (instanceId: string) => Promise<string | undefined>;
  readonly now?: () => number;
  /** Where nonces are accepted once across the cluster (a cluster passes its Redis one). */
  readonly nonces?: Nonces | undefined;
  /** This instance's id: a forwarded request signed for another instance is refused. */
  readonly instanceId?: string | undefined;
}

/** Why a request on the internal path is refused: no valid fresh signature, or one already served. */
export type ForwardRefusal = 'forbidden' | 'replayed';

/** What a verified forwarded request is for: the public path and its query (the method is the request's own). */
export interface ForwardedFor {
  readonly path: string;
  readonly query: URLSearchParams;
}

/**
 * The headers a signature covers besides the method, target and body: who asks, for which session, the
 * nonce, for which instance, and the trace the owner's span joins (`traceparent`: the sender's forward span).
 */
const SIGNED_HEADERS = ['authorization', 'mcp-session-id', NONCE, FOR_INSTANCE, 'traceparent'];

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
  const local = new InMemoryNonces(now);
  const transport = deps.transport ?? fetchTransport;
  return {
    internalPath: INTERNAL_PATH,

    /**
     * Sends `req` (POST, GET or DELETE) to `owner`, for the public `target` (path and query, e.g.
     * `/messages?sessionId=…`); `body` is the POST body as read (ignored for GET/DELETE, which carry
     * none). The owner's answer, streamed; undefined when the owner has no URL or cannot be reached.
     * The forwarded request is aborted with `req.signal`.
     */
    async send(owner: string, target: string, req: ForwardSource, body = ''): Promise<Response | undefined> {
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
      headers.set(NONCE, randomBytes(16).toString('base64url'));
      headers.set(FOR_INSTANCE, owner);
      headers.set(SIGNATURE, sign(deps.secret, at, method, target, payload, headers));
      let res: ForwardAnswer;
      try {
        res = await transport(new URL(INTERNAL_PATH, base), { method, headers, body: method === 'POST' ? payload : undefined, signal: req.signal });
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
     * cluster over its method, target, `body` (the empty string for GET/DELETE) and a nonce never seen
     * before (the nonce is then spent); `forbidden` or `replayed` otherwise. Throws a
     * `GatewayError('cluster_unavailable')` when the nonce store cannot be asked (Redis away).
     */
    async verify(req: Request, body: string): Promise<Result<ForwardedFor, ForwardRefusal>> {
      const method = req.method.toUpperCase();
      const at = req.headers.get(AT);
      const target = req.headers.get(FOR_PATH);
      const given = req.headers.get(SIGNATURE);
      const nonce = req.headers.get(NONCE);
      if (!METHODS.has(method) || at === null || target === null || given === null || nonce === null || !/^\d+$/.test(at) || !target.startsWith('/')) {
        return err('forbidden');
      }
      const age = now() - Number(at);
      if (Math.abs(age) > MAX_AGE_MS) return err('forbidden');
      const expected = Buffer.from(sign(deps.secret, at, method, target, method === 'POST' ? body : '', req.headers), 'hex');
      const actual = Buffer.from(given, 'hex');
      if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return err('forbidden');
      if (deps.instanceId !== undefined && req.headers.get(FOR_INSTANCE) !== deps.instanceId) return err('forbidden');
      // Checked only for a valid signature (no store write for forgeries); remembered for as long as
      // the signature could still be accepted here (until `at` + MAX_AGE_MS), with a second to spare.
      const ttlMs = MAX_AGE_MS - age + 1_000;
      if (!(await local.accept(nonce, ttlMs))) return err('replayed');
      if (deps.nonces) {
        try {
          if (!(await deps.nonces.accept(nonce, ttlMs))) return err('replayed');
        } catch (e) {
          // Bound to this instance, whose own memory has just spent the nonce: that is enough.
          if (deps.instanceId === undefined)
            throw new GatewayError('cluster_unavailable', 'cannot check that this forwarded request is not a replay', { cause: e });
        }
      }
      const q = target.indexOf('?');
      return ok(q < 0 ? { path: target, query: new URLSearchParams() } : { path: target.slice(0, q), query: new URLSearchParams(target.slice(q + 1)) });
    },
  };
}
