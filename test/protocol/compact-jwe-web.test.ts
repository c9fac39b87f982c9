/** The compact JWE on Web Crypto (issue 31): the same tokens as the node:crypto one and jose, in every direction, and the same refusals. */
import { CompactEncrypt, EncryptJWT, jwtDecrypt } from 'jose';
import { describe, expect, it } from 'vitest';
import { createCompactJwe } from '../../src/protocol/compact-jwe.js';
import { createWebCompactJwe } from '../../src/protocol/compact-jwe-web.js';
import { createRequestStateCodec } from '../../src/protocol/request-state.js';
import { tamperedTokens } from '../helpers/jwe-tampering.js';
import { createWebRequestStateCodec } from '../../src/protocol/request-state-web.js';

const key = (kid: string) => ({ kid, key: crypto.getRandomValues(new Uint8Array(32)) });
const secret = (k: { key: Uint8Array }) => crypto.subtle.importKey('raw', k.key as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt']);

describe('compact JWE (dir + A256GCM) on Web Crypto', () => {
  it('opens what node:crypto and jose seal, and seals what they open', async () => {
    const k = key('k1');
    const web = await createWebCompactJwe([k]);
    const node = createCompactJwe([k]);
    expect(await web.read(node.seal({ n: 1, s: 'é' }))).toEqual({ ok: true, value: { n: 1, s: 'é' } });
    expect(node.open(await web.seal({ n: 2, s: 'ü' }))).toEqual({ n: 2, s: 'ü' });

    const token = await web.seal({ sub: 'alice', exp: Math.ceil(Date.now() / 1000) + 60 });
    const { payload, protectedHeader } = await jwtDecrypt(token, await secret(k));
    expect(protectedHeader).toEqual({ alg: 'dir', enc: 'A256GCM', kid: 'k1' });
    expect(payload).toMatchObject({ sub: 'alice' });
    const fromJose = await new EncryptJWT({ c: 'call' })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'k1' })
      .setSubject('bob')
      .setExpirationTime('1m')
      .encrypt(await secret(k));
    expect(await web.read(fromJose)).toMatchObject({ ok: true, value: { sub: 'bob', c: 'call' } });
  });

  it('opens under any of its keys, seals under the first, and refuses a key that is not 32 bytes', async () => {
    const [a, b] = [key('a'), key('b')];
    const old = createCompactJwe([b]).seal({ n: 1 });
    const both = await createWebCompactJwe([a, b]);
    expect(await both.read(old)).toEqual({ ok: true, value: { n: 1 } });
    expect(createCompactJwe([a]).open(await both.seal({ n: 3 }))).toEqual({ n: 3 });
    expect(await (await createWebCompactJwe([key('c')])).read(old)).toEqual({ ok: false, error: 'invalid' });
    await expect(createWebCompactJwe([])).rejects.toThrow();
    await expect(createWebCompactJwe([{ kid: 'short', key: new Uint8Array(16) }])).rejects.toThrow(/32 bytes/);
  });

  it('refuses, with the node codec’s reason, every input the node codec refuses', async () => {
    const k = key('k1');
    const web = await createWebCompactJwe([k]);
    const node = createCompactJwe([k]);
    const plain = new TextEncoder().encode(JSON.stringify({ n: 1 }));
    const withHeader = async (header: Record<string, unknown>) => new CompactEncrypt(plain).setProtectedHeader(header as never).encrypt(await secret(k));
    const token = node.seal({ n: 1 });
    const bad: unknown[] = [
      await withHeader({ alg: 'dir', enc: 'A256GCM', kid: 'k1', cty: 'x' }),
      await withHeader({ alg: 'dir', enc: 'A256GCM', kid: 'nope' }),
      await withHeader({ alg: 'dir', enc: 'A256GCM' }),
      ...tamperedTokens(token),
      'x'.repeat(20_000),
      undefined,
      42,
    ];
    for (const input of bad) {
      const expected = node.read(input);
      if (expected.ok) continue; // a token without - or _ has no +/ spelling
      expect(await web.read(input), String(input).slice(0, 80)).toEqual(expected);
    }
  });

  it('makes requestState tokens the Node gateway opens, and opens the Node gateway’s', async () => {
    const keys = [key('k1')];
    const web = await createWebRequestStateCodec({ keys, ttlSeconds: 60 });
    const node = await createRequestStateCodec({ keys, ttlSeconds: 60 });
    const ctx = { principal: 'alice', method: 'tools/call', digest: 'd'.repeat(43) };
    const payload = { call: 'c1', instance: 'edge', round: 1, upstream: { backend: 'core', state: 'inner' } };
    expect(await node.open(await web.seal(payload, ctx), ctx)).toEqual({ ok: true, value: payload });
    expect(await web.open(await node.seal(payload, ctx), ctx)).toEqual({ ok: true, value: payload });
    expect(await web.open(await node.seal(payload, ctx), { ...ctx, principal: 'bob' })).toEqual({ ok: false, error: 'principal' });
  });
});
