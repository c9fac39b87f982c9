/**
 * Compact JWE (RFC 7516) with direct encryption: `alg: "dir"`, `enc: "A256GCM"`, a `kid` header and a
 * JSON payload, on node:crypto. The tokens are exactly what jose's `CompactEncrypt` / `EncryptJWT`
 * produce and read (the tests hold both directions against jose), but a seal + open costs about a tenth:
 * jose 6 runs AES-GCM through WebCrypto, whose per-operation async job was the largest item of the
 * gateway's own CPU time on an MRTR round (`npm run bench`, spec/notes/request-state.md).
 *
 * `read` and `open` never throw for bad input: anything that is not a token this module sealed under one
 * of the given keys (not a string, a non-canonical spelling, wrong shape, header, algorithm, key id, IV
 * or tag length, or a failed authentication tag) is refused.
 */
import { createCipheriv, createDecipheriv, randomFillSync, type KeyObject, createSecretKey } from 'node:crypto';
import { isCanonicalBase64url } from '../util/canonical-json.js';
import { type Result, ok, err } from '../util/result.js';
import { ALG, ENC, kidOfHeader, type AsyncCompactJwe, type JweKey } from './jwe-header.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Longer tokens are refused unread (the gateway's own are a few hundred characters). */
const MAX_TOKEN_CHARS = 16_384;

export type { JweKey } from './jwe-header.js';

export interface CompactJwe {
  /** Encrypts `payload` (serialised as JSON) under the first key. */
  seal(payload: Record<string, unknown>): string;
  /**
   * Decrypts a token sealed under any of the keys: `malformed` when it is not one spelling of a
   * compact JWE (not a string, too long, non-canonical base64url), `invalid` when it does not verify.
   */
  read(token: unknown): Result<Record<string, unknown>, 'malformed' | 'invalid'>;
  /** `read`, for callers that need no reason: the payload, or `undefined`. */
  open(token: string): Record<string, unknown> | undefined;
}

/**
 * Random IVs handed out from one buffer filled at a time: a fill is one call into the CSPRNG, which
 * cost more than the cipher itself for one 12-byte IV (a third of a seal). Each IV is taken once. A
 * refill is a new buffer, never the old one filled again: an IV handed out (a `subarray` of the old
 * one) never changes under its token, even for a seal inside another's `JSON.stringify`.
 */
const IV_POOL_BYTES = IV_BYTES * 512;
let ivPool = Buffer.alloc(0);
let ivAt = 0;
function nextIv(): Buffer {
  if (ivAt + IV_BYTES > ivPool.length) {
    ivPool = randomFillSync(Buffer.allocUnsafe(IV_POOL_BYTES));
    ivAt = 0;
  }
  ivAt += IV_BYTES;
  return ivPool.subarray(ivAt - IV_BYTES, ivAt);
}

/** The five segments of `token` when each is canonical unpadded base64url; undefined otherwise. */
function canonicalSegments(token: string): string[] | undefined {
  const parts = token.split('.');
  return parts.length === 5 && parts.every(isCanonicalBase64url) ? parts : undefined;
}

/** Creates the codec; the first key seals, every key opens. Throws on a key that is not 32 bytes. */
export function createCompactJwe(keys: readonly JweKey[]): CompactJwe {
  const [first] = keys;
  if (!first) throw new Error('createCompactJwe: at least one key is required');
  const byKid = new Map<string, KeyObject>();
  for (const k of keys) {
    if (k.key.length !== 32) throw new Error(`key ${k.kid} is not 32 bytes`);
    byKid.set(k.kid, createSecretKey(k.key));
  }
  const sealKey = byKid.get(first.kid)!;
  const headerOf = (kid: string): string => Buffer.from(JSON.stringify({ alg: ALG, enc: ENC, kid })).toString('base64url');
  const header = headerOf(first.kid);
  const aad = Buffer.from(header, 'ascii');
  /** The header segment this module writes for each key, with it as AAD, read without decoding it (others, such as jose's, are decoded). */
  const byHeader = new Map([...byKid].map(([kid, key]) => [headerOf(kid), { key, aad: Buffer.from(headerOf(kid), 'ascii') }]));

  return {
    seal(payload) {
      const iv = nextIv();
      const cipher = createCipheriv('aes-256-gcm', sealKey, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad);
      const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
      return `${header}..${iv.toString('base64url')}.${ciphertext.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
    },

    read,
    open(token) {
      const r = read(token);
      return r.ok ? r.value : undefined;
    },
  };

  /** The key and AAD of a header segment spelt otherwise than this module writes it. */
  function keyOfHeader(h: string): { key: KeyObject; aad: Buffer } | undefined {
    const kid = kidOfHeader(Buffer.from(h, 'base64url').toString('utf8'));
    const key = kid === undefined ? undefined : byKid.get(kid);
    return key && { key, aad: Buffer.from(h, 'ascii') };
  }

  function read(token: unknown): Result<Record<string, unknown>, 'malformed' | 'invalid'> {
    const parts = typeof token === 'string' && token.length > 0 && token.length <= MAX_TOKEN_CHARS ? canonicalSegments(token) : undefined;
    if (!parts) return err('malformed');
    const payload = decrypt(parts);
    return payload ? ok(payload) : err('invalid');
  }

  /** Verifies and decrypts the segments of a canonical compact token; undefined when it is not one of ours. */
  function decrypt(parts: string[]): Record<string, unknown> | undefined {
    if (parts[1] !== '') return undefined;
    const [h, , ivText, ctText, tagText] = parts as [string, string, string, string, string];
    const keyed = byHeader.get(h) ?? keyOfHeader(h);
    if (!keyed) return undefined;
    const iv = Buffer.from(ivText, 'base64url');
    const tag = Buffer.from(tagText, 'base64url');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyed.key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(keyed.aad);
      decipher.setAuthTag(tag);
      const plain = Buffer.concat([decipher.update(Buffer.from(ctText, 'base64url')), decipher.final()]);
      const payload: unknown = JSON.parse(plain.toString('utf8'));
      if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
      return payload as Record<string, unknown>;
    } catch {
      return undefined;
    }
  }
}

/** The codec of `createCompactJwe` behind the asynchronous interface the Web Crypto codec has (state-codec.ts, remote task ids). */
export function createAsyncCompactJwe(keys: readonly JweKey[]): AsyncCompactJwe {
  const jwe = createCompactJwe(keys);
  return { seal: async (p) => jwe.seal(p), read: async (t) => jwe.read(t) };
}
