/**
 * Forwarding a request to the instance that must serve it (cluster mode): the request goes to that
 * instance's internal URL on `INTERNAL_PATH` with its own method (POST, or GET/DELETE for a legacy
 * session), signed with the cluster secret (HMAC-SHA256 over the time, the method, the public path with
 * its query, the body — empty for GET/DELETE — the caller's Authorization, Mcp-Gateway-Principal and
 * Mcp-Session-Id, and a fresh random nonce, so a captured signature is good for nothing else; and the
 * `traceparent` the owner's span joins, when tracing is on; a second signature covers the same without
 * the body but with its length, checked before the body is read: forward-signing.ts,
 * forward-verifier.ts), and its answer — JSON or an SSE stream, progress included — is passed back as it comes. Aborting the incoming request (its client
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
import { randomBytes } from 'node:crypto';
import { PRINCIPAL_HEADER } from '../config.js';
import { CHANNEL_PATH } from './channel-frames.js';
import { errorResponseFor } from './forward-answer.js';
import { BOOT, FOR_INSTANCE, FOR_PATH, METHODS, NONCE, REFUSED, REPLAYED, signForward } from './forward-signing.js';
import { createForwardVerifier } from './forward-verifier.js';
import { InMemoryNonces } from './nonces.js';

export type { ForwardRefusal, ForwardedFor } from './forward-verifier.js';

export const INTERNAL_PATH = '/_cluster/forward';
/** The status of a forward signed for no boot of its owner, or another one (RFC 9110 "Misdirected Request"). */
const MISDIRECTED = 421;
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
export const RETURNED = ['content-type', 'cache-control', 'retry-after', 'www-authenticate', 'mcp-session-id', 'allow'];

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
   * Told when the owner refused the forward on its internal path for its signature (`forbidden`, as
   * from an instance with another cluster secret): `send` then resolves undefined, as for an owner it
   * cannot reach, and the request is served where it arrived. Nothing was served there.
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
    headers[NONCE] = randomBytes(16).toString('base64url');
    if (forBoot !== undefined) headers[BOOT] = forBoot;
    else delete headers[BOOT];
    signForward(deps.secret, String(now()), method, target, payload, headers);
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
    replayedHeader: REPLAYED,
    ...createForwardVerifier({ secret: deps.secret, now, instanceId: deps.instanceId, boot, nonces: local }),
    /**
     * The signed head of a channel's `CONNECT` to `owner` (signed as a GET of `CHANNEL_PATH`, no body: the channel
     * carries forwards from then on, forward-channel.ts), signed for `forBoot` (default: its boot as
     * last heard), with the nonce the channel's key is made from.
     */
    channelHead(owner: string, forBoot = boots.get(owner)): { headers: Record<string, string>; nonce: string; signedFor: string | undefined } {
      const headers: Record<string, string> = { [FOR_PATH]: CHANNEL_PATH, [FOR_INSTANCE]: owner };
      signFor(forBoot, 'GET', CHANNEL_PATH, '', headers);
      return { headers, nonce: headers[NONCE]!, signedFor: forBoot };
    },
    /** What `owner` said its boot id is (every answer from it, a channel's included, carries it). */
    heard(owner: string, boot: string): void {
      boots.set(owner, boot);
    },
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
        if (res.headers.get(REPLAYED) !== null) {
          // Refused as a copy of one it served: this forward went out twice, and the first may have run.
          if (res.body !== null && typeof res.body !== 'string') await res.body.cancel().catch(() => undefined);
          return errorResponseFor(payload, 'forward_cut');
        }
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
  };
}
