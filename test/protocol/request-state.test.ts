import { describe, expect, it } from 'vitest';
import { createRequestStateCodec, parseStateKeys, randomStateKey } from '../../src/protocol/request-state.js';
import { base64url } from '../../src/util/canonical-json.js';

const ctx = { principal: 'alice', method: 'tools/call', digest: 'd1' };
const payload = { call: 'parked-call-identifier', instance: 'i1', round: 1 };

describe('requestState codec', () => {
  it('round-trips a payload and hides it (JWE, dir + A256GCM, kid)', async () => {
    const key = await randomStateKey();
    const codec = await createRequestStateCodec({ keys: [key], ttlSeconds: 60 });
    const token = await codec.seal(payload, ctx);
    expect(token.split('.')).toHaveLength(5);
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as Record<string, string>;
    expect(header).toEqual({ alg: 'dir', enc: 'A256GCM', kid: key.kid });
    expect(token).not.toContain('parked-call-identifier');
    expect(await codec.open(token, ctx)).toEqual({ ok: true, value: payload });
  });

  it('seals the trace context of the call hidden, opens it back, and tells it only to the principal the state is for', async () => {
    const codec = await createRequestStateCodec({ keys: [await randomStateKey()], ttlSeconds: 60 });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const token = await codec.seal({ ...payload, trace: traceparent }, ctx);
    expect(token).not.toContain('0af7651916cd43dd8448eb211c80319c');
    expect(await codec.open(token, ctx)).toEqual({ ok: true, value: { ...payload, trace: traceparent } });
    expect(await codec.sealedTrace(token, 'alice')).toBe(traceparent);
    expect(await codec.sealedTrace(token, 'bob')).toBeUndefined();
    expect(await codec.sealedTrace(await codec.seal(payload, ctx), 'alice')).toBeUndefined();
    expect(await codec.sealedTrace('garbage', 'alice')).toBeUndefined();
  });

  it('rejects tampering, another principal, another request and garbage', async () => {
    const codec = await createRequestStateCodec({ keys: [await randomStateKey()], ttlSeconds: 60 });
    const token = await codec.seal(payload, ctx);
    const parts = token.split('.');
    // The third character from the end is all data (the last may hold a base64url tail's spare bits).
    parts[3] = parts[3]!.slice(0, -3) + (parts[3]!.at(-3) === 'A' ? 'B' : 'A') + parts[3]!.slice(-2);
    expect(await codec.open(parts.join('.'), ctx)).toEqual({ ok: false, error: 'invalid' });
    expect(await codec.open(token, { ...ctx, principal: 'bob' })).toEqual({ ok: false, error: 'principal' });
    expect(await codec.open(token, { ...ctx, digest: 'd2' })).toEqual({ ok: false, error: 'request' });
    expect(await codec.open(token, { ...ctx, method: 'prompts/get' })).toEqual({ ok: false, error: 'request' });
    for (const junk of [undefined, 42, '', 'a.b', 'x'.repeat(20_000)]) expect((await codec.open(junk, ctx)).ok).toBe(false);
  });

  it('expires exactly at its TTL, to the millisecond', async () => {
    let now = 1_700_000_000_123;
    const codec = await createRequestStateCodec({ keys: [await randomStateKey()], ttlSeconds: 1, now: () => now });
    const token = await codec.seal(payload, ctx);
    now += 999;
    expect((await codec.open(token, ctx)).ok).toBe(true);
    now += 1;
    expect(await codec.open(token, ctx)).toEqual({ ok: false, error: 'expired' });
  });

  it('accepts only the canonical encoding of a state (no padding, whitespace or stray bits)', async () => {
    const codec = await createRequestStateCodec({ keys: [await randomStateKey()], ttlSeconds: 60 });
    const token = await codec.seal(payload, ctx);
    expect((await codec.open(token, ctx)).ok).toBe(true);
    const parts = token.split('.');
    const last = parts[4]!;
    // flip the unused low bits of the last base64url character: same bytes, different string
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const lastChar = last[last.length - 1]!;
    const padBits = (last.length * 6) % 8;
    const sibling = alphabet[alphabet.indexOf(lastChar) ^ ((1 << padBits) - 1 || 0)]!;
    const variants = [`${token}==`, ` ${token}`, `${token}\n`, [...parts.slice(0, 4), `${last}=`].join('.')];
    if (padBits > 0) variants.push([...parts.slice(0, 4), last.slice(0, -1) + sibling].join('.'));
    for (const v of variants) expect(await codec.open(v, ctx), JSON.stringify(v)).toEqual({ ok: false, error: 'malformed' });
  });

  it('opens states sealed with an older key after rotation, and refuses unknown keys', async () => {
    const [oldKey, newKey, strangerKey] = [await randomStateKey(), await randomStateKey(), await randomStateKey()];
    const before = await createRequestStateCodec({ keys: [oldKey], ttlSeconds: 60 });
    const token = await before.seal(payload, ctx);
    const after = await createRequestStateCodec({ keys: [newKey, oldKey], ttlSeconds: 60 });
    expect((await after.open(token, ctx)).ok).toBe(true);
    expect(JSON.parse(Buffer.from((await after.seal(payload, ctx)).split('.')[0]!, 'base64url').toString()).kid).toBe(newKey.kid);
    const stranger = await createRequestStateCodec({ keys: [strangerKey], ttlSeconds: 60 });
    expect(await stranger.open(token, ctx)).toEqual({ ok: false, error: 'invalid' });
  });

  it('parses base64url keys of exactly 32 bytes and names bad ones by position only', async () => {
    const k1 = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const k2 = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const keys = await parseStateKeys(`${k1}, ${k2}`);
    expect(keys.map((k) => k.kid)).toHaveLength(2);
    expect(keys[0]!.kid).not.toBe(keys[1]!.kid);
    const short = base64url(new Uint8Array(16));
    await expect(parseStateKeys(`${k1},${short}`)).rejects.toThrow(/#2/);
    await expect(parseStateKeys(`${k1},${short}`)).rejects.not.toThrow(short);
    await expect(parseStateKeys('')).rejects.toThrow();
  });
});
