/**
 * The requestState codec (2026-07-28 basic/patterns/mrtr.mdx "requestState security").
 *
 * A compact JWE (`dir` + `A256GCM`, `kid` header) whose encrypted claims bind: the principal (`sub`),
 * an expiry (`exp`), the method and a digest of the request's salient params, the parked call it
 * continues, the gateway instance that holds it and the round. Keys are imported once; the first key
 * seals and every key opens, so keys rotate without breaking in-flight retries. Failures come back as
 * opaque reasons; nothing of the payload is ever logged.
 */
import { EncryptJWT, jwtDecrypt, errors as joseErrors } from 'jose';
import { base64url, fromBase64url } from '../util/canonical-json.js';
import { type Result, ok, err } from '../util/result.js';

/** What a requestState carries besides principal and expiry. */
export interface StatePayload {
  /** Parked call id. */
  readonly call: string;
  /** Instance id of the gateway that holds the parked call. */
  readonly instance: string;
  /** Round number the state was minted for (1 = first input_required). */
  readonly round: number;
  /** Opaque state of a 2026-07-28 backend, wrapped so its retry is routed back to it. */
  readonly upstream?: string;
}

/** The request the state is presented with. */
export interface StateContext {
  readonly principal: string;
  readonly method: string;
  /** Digest of the salient params (see `requestDigest`). */
  readonly digest: string;
}

export type StateFailure = 'malformed' | 'invalid' | 'expired' | 'principal' | 'request';

export interface RequestStateCodec {
  /** Seals `payload` for `ctx`. */
  seal(payload: StatePayload, ctx: StateContext): Promise<string>;
  /** Opens and verifies a token presented with `ctx`. Never throws for bad input. */
  open(token: unknown, ctx: StateContext): Promise<Result<StatePayload, StateFailure>>;
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
}

const ALG = 'dir';
const ENC = 'A256GCM';

/** Creates the codec; imports every key once. Throws if no key is given. */
export async function createRequestStateCodec(options: RequestStateCodecOptions): Promise<RequestStateCodec> {
  const [first] = options.keys;
  if (!first) throw new Error('createRequestStateCodec: at least one key is required');
  const imported = new Map<string, CryptoKey>();
  for (const k of options.keys) {
    if (k.key.length !== 32) throw new Error(`requestState key ${k.kid} is not 32 bytes`);
    imported.set(k.kid, await crypto.subtle.importKey('raw', k.key as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt']));
  }
  const sealKid = first.kid;
  const sealKey = imported.get(sealKid)!;

  return {
    async seal(payload, ctx) {
      const claims: Record<string, unknown> = { m: ctx.method, d: ctx.digest, c: payload.call, i: payload.instance, r: payload.round };
      if (payload.upstream !== undefined) claims['u'] = payload.upstream;
      return new EncryptJWT(claims)
        .setProtectedHeader({ alg: ALG, enc: ENC, kid: sealKid })
        .setSubject(ctx.principal)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + options.ttlSeconds)
        .encrypt(sealKey);
    },

    async open(token, ctx) {
      if (typeof token !== 'string' || token.length === 0 || token.length > 16_384 || token.split('.').length !== 5) {
        return err('malformed');
      }
      let claims: Record<string, unknown>;
      try {
        const res = await jwtDecrypt(
          token,
          (header) => {
            const key = typeof header.kid === 'string' ? imported.get(header.kid) : undefined;
            if (!key) throw new joseErrors.JWEInvalid('unknown kid');
            return key;
          },
          { keyManagementAlgorithms: [ALG], contentEncryptionAlgorithms: [ENC], requiredClaims: ['exp', 'sub'] },
        );
        claims = res.payload as Record<string, unknown>;
      } catch (e) {
        if (e instanceof joseErrors.JWTExpired) return err('expired');
        return err('invalid');
      }
      if (claims['sub'] !== ctx.principal) return err('principal');
      if (claims['m'] !== ctx.method || claims['d'] !== ctx.digest) return err('request');
      const { c, i, r, u } = claims;
      if (typeof c !== 'string' || typeof i !== 'string' || typeof r !== 'number' || (u !== undefined && typeof u !== 'string')) {
        return err('invalid');
      }
      return ok(u === undefined ? { call: c, instance: i, round: r } : { call: c, instance: i, round: r, upstream: u });
    },
  };
}
