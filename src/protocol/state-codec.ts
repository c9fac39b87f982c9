/**
 * The requestState codec (2026-07-28 basic/patterns/mrtr.mdx "requestState security"), on whichever
 * compact JWE the runtime has: node:crypto (request-state.ts, the Node gateway) or Web Crypto
 * (compact-jwe-web.ts, the edge handler); the same tokens either way. Nothing here needs Node.
 *
 * A compact JWE (`dir` + `A256GCM`, `kid` header) whose encrypted claims bind: the principal (`sub`),
 * an expiry (`exp`), the method and a digest of every param of the request but `inputResponses`,
 * `requestState` and `_meta` (so any other change to the request is refused), the parked call it
 * continues, the gateway instance that holds it and the round. Keys are imported once; the first key
 * seals and every key opens, so keys rotate without breaking in-flight retries. Failures come back as
 * opaque reasons; nothing of the payload is ever logged.
 */
import { base64url, canonicalJson, fromBase64url } from '../util/canonical-json.js';
import { type Result, ok, err } from '../util/result.js';
import type { AsyncCompactJwe } from './jwe-header.js';

/** What a requestState carries besides principal and expiry. */
export interface StatePayload {
  /** Parked call id. */
  readonly call: string;
  /** Instance id of the gateway that holds the parked call. */
  readonly instance: string;
  /** Round number the state was minted for (1 = first input_required). */
  readonly round: number;
  /** A 2026-07-28 backend's own state (possibly empty), wrapped so its retry goes back to that backend. */
  readonly upstream?: { readonly backend: string; readonly state: string };
  /**
   * The W3C `traceparent` of the call's first request span, when tracing is on: every later round's
   * request span is its child, so the rounds of one call form one trace on whichever instance they land.
   */
  readonly trace?: string;
}

/** The request the state is presented with. */
export interface StateContext {
  readonly principal: string;
  readonly method: string;
  /**
   * Digest of the method and every param but `inputResponses`, `requestState` and `_meta`
   * (fronts/mrtr/round-request.ts), made by the codec's `digest`: a promise where the runtime only
   * hashes asynchronously (Web Crypto).
   */
  readonly digest: string | PromiseLike<string>;
}

/** base64url of SHA-256 over the canonical JSON of a value: synchronous on node:crypto, a promise on Web Crypto. */
export type Digester = (value: unknown) => string | Promise<string>;

export type StateFailure = 'malformed' | 'invalid' | 'expired' | 'principal' | 'request';

export interface RequestStateCodec {
  /** The digest `StateContext.digest` is made with (throws `TooDeepError` where canonicalJson does). */
  readonly digest: Digester;
  /** Seals `payload` for `ctx`. */
  seal(payload: StatePayload, ctx: StateContext): Promise<string>;
  /** Opens and verifies a token presented with `ctx`. Never throws for bad input. */
  open(token: unknown, ctx: StateContext): Promise<Result<StatePayload, StateFailure>>;
  /**
   * Where a retry with `token` must be served: the instance and call it names, when the token is one of
   * ours, unexpired and `principal`'s (the request binding is checked where it is served). Undefined for
   * anything else, and for a stateless backend's state (any instance carries it on).
   */
  sealedOwner(token: unknown, principal: string): Promise<{ instance: string; call: string } | undefined>;
  /**
   * The `traceparent` sealed in a retry's `token` (the parent of its request span), when the token is
   * one of ours, unexpired, `principal`'s and carries one; undefined for anything else.
   */
  sealedTrace(token: unknown, principal: string): Promise<string | undefined>;
}

/** A 32-byte AES key with its key id. */
export interface StateKey {
  readonly kid: string;
  readonly key: Uint8Array;
}

/** A key id derived from the key itself (so operators never name kids): 11 chars of SHA-256. */
export async function keyIdOf(key: Uint8Array): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', key as Uint8Array<ArrayBuffer>));
  return base64url(hash).slice(0, 11);
}

/**
 * Parses one or more base64url keys separated by commas or whitespace. Every key must decode to
 * exactly 32 bytes. Throws a message naming the bad entry's position (never its value).
 */
export async function parseStateKeys(text: string): Promise<StateKey[]> {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) throw new Error('no requestState key given');
  const keys: StateKey[] = [];
  for (const [i, part] of parts.entries()) {
    const key = fromBase64url(part);
    if (!key || key.length !== 32) throw new Error(`requestState key #${i + 1} is not base64url of exactly 32 bytes`);
    keys.push({ kid: await keyIdOf(key), key });
  }
  return keys;
}

/** A fresh random key (used when none is configured; retries then do not survive a restart). */
export async function randomStateKey(): Promise<StateKey> {
  const key = crypto.getRandomValues(new Uint8Array(32));
  return { kid: await keyIdOf(key), key };
}

export interface RequestStateCodecOptions {
  /** First seals, all open. */
  readonly keys: readonly StateKey[];
  /** Lifetime of a minted state. */
  readonly ttlSeconds: number;
  /** The clock (default `Date.now`); tests move it instead of sleeping. */
  readonly now?: () => number;
}

/** The Web Crypto digester (the edge handler's; node:crypto's is synchronous, request-state.ts). */
export const webDigest: Digester = async (value) =>
  base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonicalJson(value)))));

/** The codec on `jwe` (built from `options.keys`), binding states to requests digested by `digest`. */
export function createStateCodec(jwe: AsyncCompactJwe, digest: Digester, options: RequestStateCodecOptions): RequestStateCodec {
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlSeconds * 1000;

  return {
    digest,
    async seal(payload, ctx) {
      const issuedAt = now();
      const expiresAt = issuedAt + ttlMs;
      // JWT claims (`sub`, `iat`, `exp` in whole seconds, rounded up) plus ours; `x` is the expiry to the millisecond.
      const claims: Record<string, unknown> = {
        m: ctx.method,
        d: typeof ctx.digest === 'string' ? ctx.digest : await ctx.digest,
        c: payload.call,
        i: payload.instance,
        r: payload.round,
        x: expiresAt,
        sub: ctx.principal,
        iat: Math.floor(issuedAt / 1000),
        exp: Math.ceil(expiresAt / 1000),
      };
      if (payload.upstream !== undefined) {
        claims['b'] = payload.upstream.backend;
        claims['u'] = payload.upstream.state;
      }
      if (payload.trace !== undefined) claims['t'] = payload.trace;
      return jwe.seal(claims);
    },

    async sealedOwner(token, principal) {
      const read = await jwe.read(token);
      if (!read.ok) return undefined;
      const { sub, x, c, i, b } = read.value;
      if (sub !== principal || typeof x !== 'number' || now() >= x || b !== undefined) return undefined;
      return typeof c === 'string' && typeof i === 'string' && c !== '' ? { instance: i, call: c } : undefined;
    },

    async sealedTrace(token, principal) {
      const read = await jwe.read(token);
      if (!read.ok) return undefined;
      const { sub, x, t } = read.value;
      return sub === principal && typeof x === 'number' && now() < x && typeof t === 'string' ? t : undefined;
    },

    async open(token, ctx) {
      const read = await jwe.read(token);
      if (!read.ok) return err(read.error);
      const claims = read.value;
      if (typeof claims['exp'] !== 'number' || typeof claims['sub'] !== 'string') return err('invalid');
      if (typeof claims['x'] !== 'number' || now() >= claims['x']) return err('expired');
      if (claims['sub'] !== ctx.principal) return err('principal');
      if (claims['m'] !== ctx.method || claims['d'] !== (typeof ctx.digest === 'string' ? ctx.digest : await ctx.digest)) return err('request');
      const { c, i, r, b, u, t } = claims;
      if (typeof c !== 'string' || typeof i !== 'string' || typeof r !== 'number') return err('invalid');
      const trace = typeof t === 'string' ? { trace: t } : {};
      if (u === undefined && b === undefined) return ok({ call: c, instance: i, round: r, ...trace });
      if (typeof u !== 'string' || typeof b !== 'string') return err('invalid');
      return ok({ call: c, instance: i, round: r, upstream: { backend: b, state: u }, ...trace });
    },
  };
}
