/**
 * What the gateway's compact JWE implementations, node:crypto (compact-jwe.ts) and Web Crypto
 * (compact-jwe-web.ts), share: the key, the asynchronous interface, and the protected header
 * `{"alg":"dir","enc":"A256GCM","kid":…}` and nothing else.
 */
import type { Result } from '../util/result.js';

/** A 32-byte AES key under its key id. */
export interface JweKey {
  readonly kid: string;
  readonly key: Uint8Array;
}

/** A compact JWE whose operations are asynchronous (Web Crypto's are). */
export interface AsyncCompactJwe {
  /** Encrypts `payload` (serialised as JSON) under the first key. */
  seal(payload: Record<string, unknown>): Promise<string>;
  /** `malformed`: not one spelling of a compact JWE; `invalid`: it does not verify under any key. */
  read(token: unknown): Promise<Result<Record<string, unknown>, 'malformed' | 'invalid'>>;
}

export const ALG = 'dir';
export const ENC = 'A256GCM';

/**
 * The key id of a decoded protected header when it holds exactly the three members the gateway writes
 * (no `zip`, no `crit`, nothing to interpret); undefined for anything else, unparseable text included.
 */
export function kidOfHeader(text: string): string | undefined {
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return undefined;
  const { alg, enc, kid, ...rest } = header as Record<string, unknown>;
  return alg === ALG && enc === ENC && typeof kid === 'string' && Object.keys(rest).length === 0 ? kid : undefined;
}
