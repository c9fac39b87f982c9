/**
 * Hex SHA-256 of a key or token, how the authenticator and the introspection cache look them up
 * (never as text). This one is Web Crypto's (any runtime: the edge handler); the Node gateway passes
 * node:crypto's synchronous one (key-hash-node.ts).
 */

/** Hex SHA-256 of a key: synchronous where the runtime can (node:crypto), else a promise. */
export type KeyHash = (text: string) => string | Promise<string>;

/** Hex SHA-256 on Web Crypto. */
export const webKeyHash: KeyHash = async (text) =>
  [...new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))].map((b) => b.toString(16).padStart(2, '0')).join('');
