/**
 * Forwarding a request to the instance that must serve it (cluster mode): the request goes to that
 * instance's internal URL on `INTERNAL_PATH` with its own method (POST, or GET/DELETE for a legacy
 * session), signed with the cluster secret (HMAC-SHA256 over the time, the method, the public path with
 * its query, the body — empty for GET/DELETE — the caller's Authorization, Mcp-Gateway-Principal and
 * Mcp-Session-Id, and a fresh random nonce, so a captured signature is good for nothing else; and the
 * `traceparent` the owner's span joins, when tracing is on), and its answer — JSON or an SSE stream, progress included — is passed back as it comes. Aborting the incoming request (its client
 * went away) aborts the forwarded one. A request on the internal path without a valid, fresh signature
 * is refused, so nothing but another instance can use it; and each signed request is served once.
 *
 * Served once: each forwarder remembers the nonces it accepted for as long as their signatures live,
 * and has a boot id, a random name for that memory (a new one each time the process starts). A forward
 * is served only when it is signed for the boot id of the process that serves it: a replay to that
 * process is refused from its memory, a replay to any other (another instance, or the owner restarted
 * with an empty memory) for its boot id. No shared store is asked, so a forward works the same while
 * Redis is away. The sender learns the boot id from the owner: every answer to a forward carries it
 * (`x-mcpgw-boot`), and a forward signed for no boot id or another one (the first to that owner, or
 * the owner restarted since) is answered 421 with it, serving nothing; the sender then sends it again
 * once, signed for that boot id. A second 421, or one naming the boot id the forward was signed for, is
 * not passed on: the request is served where it arrived (`ForwardSource.onMisdirected` is told), as
 * for an owner that cannot be reached. The signature also names the instance the request is for.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { PRINCIPAL_HEADER } from '../config.js';
import { type Result, err, ok } from '../util/result.js';
import { InMemoryNonces } from './nonces.js';

export const INTERNAL_PATH = '/_cluster/forward';
const SIGNATURE = 'x-mcpgw-signature';
const AT = 'x-mcpgw-at';
const FOR_PATH = 'x-mcpgw-path';
const NONCE = 'x-mcpgw-nonce';
const FOR_INSTANCE = 'x-mcpgw-for';
/**
 * The signature of everything but the body, with the body's length (`x-mcpgw-bytes`): checked before
 * the body is read, so that nothing but another instance makes this one read (and hold) a body.
 */
const HEAD_SIGNATURE = 'x-mcpgw-head';
const BYTES = 'x-mcpgw-bytes';
/** On the answer to a forward refused on the internal path (its signature, a replay): why. */
const REFUSED = 'x-mcpgw-refused';
/** On a forward: the owner's boot id it is signed for. On an answer to one: the owner's boot id. */
const BOOT = 'x-mcpgw-boot';
/** The status of a forward signed for no boot of its owner, or another one (RFC 9110 "Misdirected Request"). */
const MISDIRECTED = 421;
/** How old a signature may be (clock skew between instances included). */
const MAX_AGE_MS = 30_000;
/** The request headers that travel with a forwarded request. */
const PASSED = [
  'content-type',
  'accept',
  'authorization',
  PRINCIPAL_HEADER,
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'mcp-session-id',
  'last-event-id',
  'traceparent',
];
/** The response headers that travel back. */
const RETURNED = ['content-type', 'cache-control', 'retry-after', 'www-authenticate', 'mcp-session-id', 'allow'];
/** The methods that are forwarded; only POST has a body. */
const METHODS = new Set(['POST', 'GET', 'DELETE']);

/**
 * How a signed forward goes out and its answer comes back (the answer's body streamed as it comes).
 * Rejects when the owner cannot be reached. The default is `fetch`; the Node gateway gives its own
 * (node:http on a keep-alive agent: gateway/forward-transport.ts).
 */
export type ForwardTransport = (
  url: URL,
  init: { method: string; headers: Record<string, string>; body: string | undefined; signal: AbortSignal },
) => Promise<ForwardAnswer>;

/** The owner's answer: its body streamed, or already read whole (a string), or none; its headers by lower-case name. */
export interface ForwardAnswer {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
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
  /**
   * Told when `send` gives up on a forward the owner answered 421 twice, or 421 for the very boot id it
   * was signed for (`send` then resolves undefined, as for an owner it cannot reach): the boot ids it
   * signed for and heard. An owner restarts once between two answers at most; more means its internal
   * URL reaches more than one process, or something on the way answers for it.
   */
  readonly onMisdirected?: (boots: { readonly signed: string | undefined; readonly heard: string | null }) => void;
  /**
   * Told when the owner refused the forward on its internal path (`forbidden`: its signature, as from an
   * instance with another cluster secret or version; `replayed`): `send` then resolves undefined, as
   * for an owner it cannot reach, and the request is served where it arrived. Nothing was served there.
   */
  readonly onRefused?: (why: string) => void;
}

export interface ForwarderDeps {
  readonly secret: string;
  /** How forwards are sent (default: `fetch`). */
  readonly transport?: ForwardTransport | undefined;
  /** The internal URLs of the live instances. */
  readonly urlOf: (instanceId: string) => Promise<string | undefined>;
  readonly now?: () => number;
  /** This instance's id: a forwarded request signed for another instance is refused. */
  readonly instanceId?: string | undefined;
}

/**
 * Why a request on the internal path is refused: no valid fresh signature, one already served, or one
 * signed for no boot of this instance or another one (`misdirected`: nothing was served; send it again
 * for the boot id the answer names).
 */
export type ForwardRefusal = 'forbidden' | 'replayed' | 'misdirected';

/** What a verified forwarded request is for: the public path and its query (the method is the request's own). */
export interface ForwardedFor {
  readonly path: string;
  readonly query: URLSearchParams;
}

/**
 * The headers a signature covers besides the method, target and body: who asks (the key, and the caller
 * a delegating key names), for which session, the nonce, for which instance and which of its boots, and
 * the trace the owner's span joins (`traceparent`: the sender's forward span).
 */
const SIGNED_HEADERS = ['authorization', PRINCIPAL_HEADER, 'mcp-session-id', NONCE, FOR_INSTANCE, BOOT, 'traceparent'];

/**
 * HMAC-SHA256 over the time, the method, the target and the signed headers, one a line, then the body.
 * No line can hold a line break (neither an HTTP header value nor the target can, and the time is
 * digits) and there are always as many lines, so no two requests sign the same text; an absent header
 * signs as an empty one. `header` reads a header by lower-case name.
 */
function sign(secret: string, at: string, method: string, target: string, body: string, header: (name: string) => string | null | undefined): string {
  let head = `${at}\n${method}\n${target}\n`;
  for (const h of SIGNED_HEADERS) head += `${header(h) ?? ''}\n`;
  return createHmac('sha256', secret).update(head).update(body).digest('hex');
}

/** Whether the hex signature `given` is `expected` (compared in constant time). */
function signatureIs(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'hex');
  const b = Buffer.from(expected, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The headers of a forward of `req` to `owner`, for the public `target`; each attempt adds its signature. */
function forwardHeaders(req: ForwardSource, target: string, owner: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED) {
    const v = req.headers.get(name);
    if (v !== null) headers[name] = v;
  }
  req.headers.forEach((v, name) => {
    if (name.startsWith('mcp-param-')) headers[name] = v;
  });
  headers[FOR_PATH] = target;
  headers[FOR_INSTANCE] = owner;
  return headers;
}

/** The headers of the owner's answer that travel back to the client. */
function returnedHeaders(res: ForwardAnswer): Headers {
  const out = new Headers();
  for (const name of RETURNED) {
    const v = res.headers.get(name);
    if (v !== null) out.set(name, v);
  }
  return out;
}

export function createForwarder(deps: ForwarderDeps) {
  const now = deps.now ?? Date.now;
  const local = new InMemoryNonces(now);
  /** The name of `local`: a forward signed for it can be served by no other process. */
  const boot = randomBytes(12).toString('base64url');
  /** Each owner's boot id, as last heard in its answers. */
  const boots = new Map<string, string>();
  const transport = deps.transport ?? fetchTransport;
  /** Signs `headers` (the caller's, kept) for the owner's boot `forBoot` (none when unknown), with a fresh time and nonce. */
  const signFor = (forBoot: string | undefined, method: string, target: string, payload: string, headers: Record<string, string>): void => {
    const at = String(now());
    headers[AT] = at;
    headers[NONCE] = randomBytes(16).toString('base64url');
    if (forBoot !== undefined) headers[BOOT] = forBoot;
    else delete headers[BOOT];
    headers[SIGNATURE] = sign(deps.secret, at, method, target, payload, (name) => headers[name]);
    headers[BYTES] = String(Buffer.byteLength(payload));
    headers[HEAD_SIGNATURE] = sign(deps.secret, `head:${at}`, method, target, headers[BYTES], (name) => headers[name]);
  };
  /** The internal URL at each instance's base URL (parsing one costs more than the rest of a forward's headers). */
  const internalUrls = new Map<string, URL>();
  const internalUrl = (base: string): URL => {
    let url = internalUrls.get(base);
    if (!url) {
      if (internalUrls.size >= 256) internalUrls.clear(); // instances come and go: never more than a few are live
      internalUrls.set(base, (url = new URL(INTERNAL_PATH, base)));
    }
    return url;
  };
  return {
    internalPath: INTERNAL_PATH,
    /** The header every answer to a verified forwarded request carries: this instance's boot id. */
    answerHeader: [BOOT, boot] as const,
    refusedHeader: REFUSED,
    /** Forgets what was heard of `owner` (it is gone). */
    forget(owner: string): void {
      boots.delete(owner);
    },

    /**
     * Sends `req` (POST, GET or DELETE) to `owner`, for the public `target` (path and query, e.g.
     * `/messages?sessionId=…`); `body` is the POST body as read (ignored for GET/DELETE, which carry
     * none). The owner's answer, streamed; undefined when the owner has no URL or cannot be reached.
     * The forwarded request is aborted with `req.signal`, and then rejects.
     */
    async send(owner: string, target: string, req: ForwardSource, body = ''): Promise<Response | undefined> {
      const method = req.method.toUpperCase();
      if (!METHODS.has(method)) return undefined;
      const payload = method === 'POST' ? body : '';
      const base = await deps.urlOf(owner);
      if (!base) return undefined;
      const headers = forwardHeaders(req, target, owner);
      const url = internalUrl(base);
      let forBoot = boots.get(owner);
      let res: ForwardAnswer;
      // A second time only after a 421 (the owner's boot id not heard yet, or it restarted since): nothing was served.
      for (let attempt = 0; ; attempt++) {
        signFor(forBoot, method, target, payload, headers);
        try {
          res = await transport(url, { method, headers, body: method === 'POST' ? payload : undefined, signal: req.signal });
        } catch (e) {
          // Aborted (the client left, or the owner is known gone while this was on its way): the caller
          // tells which. Otherwise unreachable: served here, where the client is told what it can be told.
          if (req.signal.aborted) throw e;
          return undefined;
        }
        const heard = res.headers.get(BOOT);
        if (heard !== null) boots.set(owner, heard);
        const refused = res.headers.get(REFUSED);
        if (refused !== null) {
          if (res.body !== null && typeof res.body !== 'string') await res.body.cancel().catch(() => undefined);
          req.onRefused?.(refused);
          return undefined;
        }
        if (res.status !== MISDIRECTED) break;
        if (res.body !== null && typeof res.body !== 'string') await res.body.cancel().catch(() => undefined);
        // Never passed on (a fetch client would send it again itself), and never signed a second time for
        // the boot id it was signed for (no owner answers that: a second valid copy would be served too).
        if (heard === null || heard === forBoot || attempt > 0) {
          req.onMisdirected?.({ signed: forBoot, heard });
          return undefined;
        }
        forBoot = heard;
      }
      return new Response(res.body, { status: res.status, headers: returnedHeaders(res) });
    },

    /**
     * Whether a request on the internal path may have its body read: a fresh signature of its head
     * (everything but the body, with the body's length), for this instance and this boot, with a nonce
     * not spent yet; how many bytes its body has. Nothing is spent: `verify` checks the whole of it.
     */
    precheck(req: Request): Result<{ bytes: number }, ForwardRefusal> {
      const method = req.method.toUpperCase();
      const at = req.headers.get(AT);
      const target = req.headers.get(FOR_PATH);
      const given = req.headers.get(HEAD_SIGNATURE);
      const bytes = req.headers.get(BYTES);
      if (!METHODS.has(method) || at === null || target === null || given === null || bytes === null || !/^\d+$/.test(at) || !/^\d{1,10}$/.test(bytes)) {
        return err('forbidden');
      }
      if (Math.abs(now() - Number(at)) > MAX_AGE_MS) return err('forbidden');
      if (
        !signatureIs(
          given,
          sign(deps.secret, `head:${at}`, method, target, bytes, (name) => req.headers.get(name)),
        )
      )
        return err('forbidden');
      if (deps.instanceId !== undefined && req.headers.get(FOR_INSTANCE) !== deps.instanceId) return err('forbidden');
      if (req.headers.get(BOOT) !== boot) return err('misdirected');
      if (local.spent(req.headers.get(NONCE) ?? '')) return err('replayed');
      return ok({ bytes: Number(bytes) });
    },

    /**
     * What a request on the internal path was forwarded for, when it carries a fresh signature of this
     * cluster over its method, target, `body` (the empty string for GET/DELETE), this instance's boot id
     * and a nonce never seen before (the nonce is then spent); `forbidden`, `misdirected` or `replayed`
     * otherwise.
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
      if (
        !signatureIs(
          given,
          sign(deps.secret, at, method, target, method === 'POST' ? body : '', (name) => req.headers.get(name)),
        )
      )
        return err('forbidden');
      if (deps.instanceId !== undefined && req.headers.get(FOR_INSTANCE) !== deps.instanceId) return err('forbidden');
      // Signed for this boot only: this memory is the one that can spend its nonce.
      if (req.headers.get(BOOT) !== boot) return err('misdirected');
      // Remembered for as long as the signature could still be accepted here (until `at` +
      // MAX_AGE_MS), with a second to spare.
      if (!local.accept(nonce, MAX_AGE_MS - age + 1_000)) return err('replayed');
      const q = target.indexOf('?');
      return ok(q < 0 ? { path: target, query: new URLSearchParams() } : { path: target.slice(0, q), query: new URLSearchParams(target.slice(q + 1)) });
    },
  };
}
