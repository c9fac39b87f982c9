/**
 * The compact JWE of compact-jwe.ts (`alg: "dir"`, `enc: "A256GCM"`, a `kid` header, a JSON payload) on
 * Web Crypto, for runtimes without node:crypto (issue 31: the edge handler). The same tokens in both
 * directions: a token either module seals, the other opens, and jose reads and writes them too (the
 * tests hold all four directions). The same refusals: anything that is not a token sealed under one of
 * the keys (not a string, too long, a non-canonical spelling, wrong shape, header, algorithm, key id,
 * IV or tag length, a failed tag) is refused, never thrown.
 */
import { base64url, fromBase64url, isCanonicalBase64url } from '../util/canonical-json.js';
import { type Result, ok, err } from '../util/result.js';
import { ALG, ENC, kidOfHeader, type AsyncCompactJwe, type JweKey } from './jwe-header.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_TOKEN_CHARS = 16_384;

export type { AsyncCompactJwe } from './jwe-header.js';

/** Decodes one segment when it is canonical unpadded base64url (the only spelling a sealed token has). */
function segment(text: string): Uint8Array | undefined {
  return isCanonicalBase64url(text) ? fromBase64url(text) : undefined;
}

/** Creates the codec; the first key seals, every key opens. Rejects on a key that is not 32 bytes. */
export async function createWebCompactJwe(keys: readonly JweKey[]): Promise<AsyncCompactJwe> {
  const [first] = keys;
  if (!first) throw new Error('createWebCompactJwe: at least one key is required');
  const byKid = new Map<string, CryptoKey>();
  for (const k of keys) {
    if (k.key.length !== 32) throw new Error(`key ${k.kid} is not 32 bytes`);
    byKid.set(k.kid, await crypto.subtle.importKey('raw', k.key as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt']));
  }
  const sealKey = byKid.get(first.kid)!;
  const header = base64url(new TextEncoder().encode(JSON.stringify({ alg: ALG, enc: ENC, kid: first.kid })));
  const aad = new TextEncoder().encode(header);

  async function decrypt(parts: readonly Uint8Array[], h: string): Promise<Record<string, unknown> | undefined> {
    const [headerBytes, , iv, ciphertext, tag] = parts as [Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array];
    let kid: string | undefined;
    try {
      kid = kidOfHeader(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
    } catch {
      return undefined;
    }
    if (kid === undefined) return undefined;
    const key = byKid.get(kid);
    if (!key || iv.length !== IV_BYTES || tag.length !== TAG_BYTES) return undefined;
    const sealed = new Uint8Array(ciphertext.length + TAG_BYTES);
    sealed.set(ciphertext);
    sealed.set(tag, ciphertext.length);
    try {
      const plain = await crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: iv as Uint8Array<ArrayBuffer>, additionalData: new TextEncoder().encode(h), tagLength: TAG_BYTES * 8 },
        key,
        sealed,
      );
      const payload: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(plain));
      return typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? (payload as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  return {
    async seal(payload) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const plain = new TextEncoder().encode(JSON.stringify(payload));
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad, tagLength: TAG_BYTES * 8 }, sealKey, plain));
      const ciphertext = sealed.subarray(0, sealed.length - TAG_BYTES);
      const tag = sealed.subarray(sealed.length - TAG_BYTES);
      return `${header}..${base64url(iv)}.${base64url(ciphertext)}.${base64url(tag)}`;
    },

    async read(token) {
      if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_CHARS) return err('malformed');
      const texts = token.split('.');
      if (texts.length !== 5) return err('malformed');
      const parts = texts.map(segment);
      if (parts.some((p) => p === undefined)) return err('malformed');
      if (texts[1] !== '') return err('invalid');
      const payload = await decrypt(parts as Uint8Array[], texts[0]!);
      return payload ? ok(payload) : err('invalid');
    },
  };
}
