/**
 * Canonical JSON (sorted object keys, no whitespace), whose SHA-256 digest binds a requestState to the
 * request it was minted for (the codec digests: node:crypto on Node, Web Crypto at the edge), and
 * base64url. Nothing here needs Node.
 */

/** How deep `canonicalJson` goes before it refuses (far beyond any real tool arguments, far below the stack limit). */
export const MAX_JSON_DEPTH = 128;

/** Thrown by `canonicalJson` for values nested deeper than `MAX_JSON_DEPTH`. */
export class TooDeepError extends RangeError {
  constructor() {
    super(`value nests deeper than ${MAX_JSON_DEPTH} levels`);
    this.name = 'TooDeepError';
  }
}

/** Serialises `value` with object keys sorted at every depth. `undefined` members are dropped. Throws `TooDeepError`. */
export function canonicalJson(value: unknown, depth = 0): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (depth >= MAX_JSON_DEPTH) throw new TooDeepError();
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v, depth + 1)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v, depth + 1)}`).join(',')}}`;
}

/** Throws `TooDeepError` where `canonicalJson(value)` would, without building the text. */
export function checkDepth(value: unknown, depth = 0): void {
  if (value === null || typeof value !== 'object') return;
  if (depth >= MAX_JSON_DEPTH) throw new TooDeepError();
  if (Array.isArray(value)) {
    for (const v of value) checkDepth(v, depth + 1);
    return;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key)) checkDepth((value as Record<string, unknown>)[key], depth + 1);
  }
}

/** base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * True when `text` is the one spelling `base64url` gives its bytes: unpadded, the `-_` alphabet, a
 * length that is not 1 more than a multiple of 4, and the bits of the last character past the last
 * whole byte all zero (a decoder ignores them, so each byte string has 4 or 16 other spellings).
 * The same answer as decoding and comparing the encoding with `text`, without either.
 */
export function isCanonicalBase64url(text: string): boolean {
  if (!BASE64URL.test(text)) return false;
  const tail = text.length % 4;
  if (tail === 0) return true;
  if (tail === 1) return false;
  return (ALPHABET.indexOf(text[text.length - 1]!) & (tail === 2 ? 0x0f : 0x03)) === 0;
}

/** Decodes base64url (padding optional). Returns undefined on bad input. */
export function fromBase64url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return undefined;
  try {
    const bin = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}
