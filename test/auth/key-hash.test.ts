/** The authenticator's key hash: node:crypto on Node, Web Crypto at the edge; the same hex either way. */
import { describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../src/auth/authenticator.js';
import { webKeyHash } from '../../src/auth/key-hash.js';
import { nodeKeyHash } from '../../src/auth/key-hash-node.js';
import { silentLogger } from '../../src/log.js';

describe('key hash', () => {
  it('is the same SHA-256 hex on node:crypto and Web Crypto', async () => {
    for (const key of ['', 'k'.repeat(16), 'ключ-é-✓-0123456789']) expect(await webKeyHash(key)).toBe(nodeKeyHash(key));
    expect(nodeKeyHash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('finds each principal by its key with either hash, and nobody by another key', async () => {
    const keys = new Map([
      ['alice-key-0123456789', 'alice'],
      ['bob-key-0123456789ab', 'bob'],
    ]);
    for (const hash of [nodeKeyHash, webKeyHash]) {
      const authenticate = createAuthenticator(keys, undefined, silentLogger, hash);
      expect(await authenticate('Bearer alice-key-0123456789')).toEqual({ ok: true, principal: 'alice' });
      expect(await authenticate('bearer bob-key-0123456789ab')).toEqual({ ok: true, principal: 'bob' });
      expect(await authenticate('Bearer alice-key-012345678')).toMatchObject({ ok: false, status: 401 });
      expect(await authenticate(undefined)).toMatchObject({ ok: false, status: 401 });
    }
  });
});
