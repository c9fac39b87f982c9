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

/** True when `token` is five segments of canonical unpadded base64url (Buffer's decoder would also take padding, the +/ alphabet, stray characters and unused low bits). */
function isCanonicalCompact(token: string): boolean {
  const parts = token.split('.');
  if (parts.length !== 5) return false;
  for (const part of parts) {
    if (!/^[A-Za-z0-9_-]*$/.test(part) || Buffer.from(part, 'base64url').toString('base64url') !== part) return false;
  }
  return true;
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
  const header = Buffer.from(JSON.stringify({ alg: ALG, enc: ENC, kid: first.kid })).toString('base64url');
  const aad = Buffer.from(header, 'ascii');

  return {
    seal(payload) {
      const iv = randomFillSync(Buffer.allocUnsafe(IV_BYTES));
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

  function read(token: unknown): Result<Record<string, unknown>, 'malformed' | 'invalid'> {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_CHARS || !isCanonicalCompact(token)) return err('malformed');
    const payload = decrypt(token);
    return payload ? ok(payload) : err('invalid');
  }

  /** Verifies and decrypts a canonical compact token; undefined when it is not one of ours. */
  function decrypt(token: string): Record<string, unknown> | undefined {
    const parts = token.split('.');
    if (parts[1] !== '') return undefined;
    const [h, , ivText, ctText, tagText] = parts as [string, string, string, string, string];
    const kid = kidOfHeader(Buffer.from(h, 'base64url').toString('utf8'));
    if (kid === undefined) return undefined;
    const key = byKid.get(kid);
    if (!key) return undefined;
    const iv = Buffer.from(ivText, 'base64url');
    const tag = Buffer.from(tagText, 'base64url');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(h, 'ascii'));
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
