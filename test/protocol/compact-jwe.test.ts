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

  it('reads a spelling of a tag with an unused bit set as malformed, not as a tag that fails', () => {
    const jwe = createCompactJwe([key('k1')]);
    const token = jwe.seal({ n: 1 });
    const lowBitSet = tamperedTokens(token).at(-1)!;
    expect(Buffer.from(lowBitSet.split('.')[4]!, 'base64url')).toEqual(Buffer.from(token.split('.')[4]!, 'base64url'));
    expect(jwe.read(lowBitSet)).toEqual({ ok: false, error: 'malformed' });
    expect(jwe.read(token)).toEqual({ ok: true, value: { n: 1 } });
  });

  it('opens a header that names its members in another order (decoded, not matched as it writes them)', async () => {
    const k = key('k1');
    const plain = new TextEncoder().encode(JSON.stringify({ n: 2 }));
    const token = await new CompactEncrypt(plain).setProtectedHeader({ kid: 'k1', enc: 'A256GCM', alg: 'dir' }).encrypt(await secret(k));
    expect(Buffer.from(token.split('.')[0]!, 'base64url').toString()).toBe('{"kid":"k1","enc":"A256GCM","alg":"dir"}');
    expect(createCompactJwe([k]).open(token)).toEqual({ n: 2 });
  });

  it('never seals two tokens with one IV, across refills of its random bytes', () => {
    const [a, b] = [createCompactJwe([key('a')]), createCompactJwe([key('b')])];
    const ivs = new Set<string>();
    const sealed = 3 * 512 + 7; // the IVs of three refills and some, from two codecs sharing them
    for (let i = 0; i < sealed; i++) ivs.add((i % 2 ? a : b).seal({ i }).split('.')[2]!);
    expect(ivs.size).toBe(sealed);
    for (const iv of ivs) expect(Buffer.from(iv, 'base64url')).toHaveLength(12);
  });
});
