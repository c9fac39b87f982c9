/**
 * The protected header of the gateway's compact JWE, shared by its node:crypto (compact-jwe.ts) and Web
 * Crypto (compact-jwe-web.ts) implementations: `{"alg":"dir","enc":"A256GCM","kid":…}` and nothing else.
 */

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
