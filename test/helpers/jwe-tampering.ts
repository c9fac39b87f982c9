/**
 * Tokens a compact JWE codec must refuse, made from one of its own `token`s (shared by the node:crypto
 * and Web Crypto codecs' tests): other headers, segments swapped or cut, tampering, and other spellings
 * of the same token (padding, the +/ alphabet, a stray character, the tag's last character with a bit
 * the decoder ignores set: the same bytes, spelt otherwise). A token without - or _ has no +/
 * spelling: that entry is then the token itself, and callers skip it.
 */
export function tamperedTokens(token: string): string[] {
  const parts = token.split('.');
  const swap = (i: number, v: string) => parts.map((p, j) => (j === i ? v : p)).join('.');
  const h = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  // A 16-byte tag is 22 characters, whose last one carries 2 bits of the tag and 4 unused ones.
  const tag = parts[4]!;
  const lowBitSet = tag.slice(0, -1) + alphabet[alphabet.indexOf(tag.at(-1)!) | 1];
  return [
    swap(0, h({ alg: 'dir', enc: 'A128GCM', kid: 'k1' })),
    swap(0, h({ alg: 'dir', enc: 'A256GCM', kid: 'k1', zip: 'DEF' })),
    swap(0, h({ alg: 'dir', enc: 'A256GCM', kid: 'k1', crit: ['x'], x: 1 })),
    swap(0, h(['dir'])),
    swap(0, 'bm90IGpzb24'),
    swap(1, 'AAAA'),
    swap(2, Buffer.alloc(16).toString('base64url')),
    swap(4, parts[4]!.slice(0, 8)),
    swap(3, Buffer.from('tampered').toString('base64url')),
    swap(4, Buffer.alloc(16).toString('base64url')),
    parts.slice(0, 4).join('.'),
    '',
    `${token}==`,
    swap(3, `${parts[3]!}=`),
    token.replace(/-/g, '+').replace(/_/g, '/'),
    swap(3, `${parts[3]!.slice(0, 2)}*${parts[3]!.slice(2)}`),
    swap(4, lowBitSet),
  ];
}
