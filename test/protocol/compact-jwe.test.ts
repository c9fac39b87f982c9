import { CompactEncrypt, EncryptJWT, jwtDecrypt } from 'jose';
import { describe, expect, it } from 'vitest';
import { createCompactJwe } from '../../src/protocol/compact-jwe.js';
import { tamperedTokens } from '../helpers/jwe-tampering.js';

const key = (kid: string) => ({ kid, key: crypto.getRandomValues(new Uint8Array(32)) });
const secret = (k: { key: Uint8Array }) => crypto.subtle.importKey('raw', k.key as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt']);

describe('compact JWE (dir + A256GCM) on node:crypto', () => {
  it('seals tokens jose opens, and opens tokens jose seals', async () => {
    const k = key('k1');
    const jwe = createCompactJwe([k]);
    const token = jwe.seal({ sub: 'alice', exp: Math.ceil(Date.now() / 1000) + 60, c: 'call' });
    const { payload, protectedHeader } = await jwtDecrypt(token, await secret(k));
    expect(protectedHeader).toEqual({ alg: 'dir', enc: 'A256GCM', kid: 'k1' });
    expect(payload).toMatchObject({ sub: 'alice', c: 'call' });

    const fromJose = await new EncryptJWT({ c: 'call' })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'k1' })
      .setSubject('bob')
      .setExpirationTime('1m')
      .encrypt(await secret(k));
    expect(jwe.open(fromJose)).toMatchObject({ sub: 'bob', c: 'call' });
  });

  it('opens under any of its keys and seals under the first', async () => {
    const [a, b] = [key('a'), key('b')];
    const old = createCompactJwe([b]).seal({ n: 1 });
    const both = createCompactJwe([a, b]);
    expect(both.open(old)).toEqual({ n: 1 });
    expect(JSON.parse(Buffer.from(both.seal({}).split('.')[0]!, 'base64url').toString())).toMatchObject({ kid: 'a' });
    expect(createCompactJwe([key('c')]).open(old)).toBeUndefined();
    expect(() => createCompactJwe([])).toThrow();
    expect(() => createCompactJwe([{ kid: 'short', key: new Uint8Array(16) }])).toThrow(/32 bytes/);
  });

  it('refuses headers it did not write (zip, crit, other algorithms), odd IV or tag lengths and tampering', async () => {
    const k = key('k1');
    const jwe = createCompactJwe([k]);
    const plain = new TextEncoder().encode(JSON.stringify({ n: 1 }));
    const withHeader = async (header: Record<string, unknown>) => new CompactEncrypt(plain).setProtectedHeader(header as never).encrypt(await secret(k));
    expect(jwe.open(await withHeader({ alg: 'dir', enc: 'A256GCM', kid: 'k1' }))).toEqual({ n: 1 });
    expect(jwe.open(await withHeader({ alg: 'dir', enc: 'A256GCM', kid: 'k1', cty: 'x' }))).toBeUndefined();
    expect(jwe.open(await withHeader({ alg: 'dir', enc: 'A256GCM', kid: 'nope' }))).toBeUndefined();
    expect(jwe.open(await withHeader({ alg: 'dir', enc: 'A256GCM' }))).toBeUndefined();

    const token = jwe.seal({ n: 1 });
    for (const bad of tamperedTokens(token)) {
      if (bad === token) continue; // a token without - or _ has no +/ spelling
      expect(jwe.open(bad), bad).toBeUndefined();
    }
    expect(jwe.open(undefined as unknown as string)).toBeUndefined();
  });
});
