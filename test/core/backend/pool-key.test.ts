import { describe, expect, it } from 'vitest';
import { decodePoolKey, encodePoolKey, poolGroupOf, poolKeyOf } from '../../../src/core/backend/pool-key.js';
import { canonicalJson } from '../../../src/util/canonical-json.js';

const ELICIT = { elicitation: { form: {} } };

describe('pool keys', () => {
  it('decodes what it encodes: capability set, principal, multiplex', () => {
    for (const key of [
      { caps: ELICIT, principal: 'alice', multiplex: false },
      { caps: {}, principal: 'bob\u0000with\u0001odd chars', multiplex: true },
      { caps: { sampling: { tools: {} }, roots: {} }, principal: undefined, multiplex: false },
    ]) {
      expect(decodePoolKey(encodePoolKey(key))).toEqual(key.principal === undefined ? { caps: key.caps, multiplex: key.multiplex } : key);
    }
  });

  it('encodes equal keys as equal strings whatever the order the capabilities were declared in', () => {
    const a = encodePoolKey({ caps: { sampling: {}, elicitation: { form: {} } }, principal: 'p', multiplex: false });
    const b = encodePoolKey({ caps: { elicitation: { form: {} }, sampling: {} }, principal: 'p', multiplex: false });
    expect(a).toBe(b);
    expect(encodePoolKey({ caps: {}, principal: 'p', multiplex: true })).not.toBe(encodePoolKey({ caps: {}, principal: 'p', multiplex: false }));
  });

  it('keys a principal-isolated server by principal, a shared one by capability set alone', () => {
    const call = { caps: ELICIT, principal: 'alice' };
    expect(poolKeyOf(call, 'principal')).toEqual({ caps: ELICIT, principal: 'alice', multiplex: false });
    expect(poolKeyOf(call, 'shared')).toEqual({ caps: ELICIT, principal: undefined, multiplex: false });
    expect(encodePoolKey(poolKeyOf(call, 'shared'))).toBe(encodePoolKey(poolKeyOf({ ...call, principal: 'bob' }, 'shared')));
  });

  it('multiplexes only a caller that can be asked nothing and wants no logs', () => {
    expect(poolKeyOf({ caps: {}, principal: 'p' }, 'principal').multiplex).toBe(true);
    expect(poolKeyOf({ caps: {}, principal: 'p', logLevel: 'info' }, 'principal').multiplex).toBe(false);
    expect(poolKeyOf({ caps: { roots: {} }, principal: 'p' }, 'principal').multiplex).toBe(false);
  });

  it('counts a key against its principal, or its capability set when sessions are shared across principals', () => {
    expect(poolGroupOf(encodePoolKey({ caps: ELICIT, principal: 'alice', multiplex: false }))).toBe('alice');
    expect(poolGroupOf(encodePoolKey({ caps: ELICIT, principal: 'alice', multiplex: true }))).toBe('alice');
    expect(poolGroupOf(encodePoolKey({ caps: ELICIT, multiplex: false }))).toBe('{"elicitation":{"form":{}}}');
  });

  it('is the canonical JSON of the key, principal or none, multiplexed or not', () => {
    for (const principal of ['alice', 'a "quoted" \u2028 name', undefined]) {
      for (const multiplex of [true, false]) {
        const key = { caps: { sampling: { tools: {} }, elicitation: { url: {}, form: {} } }, principal, multiplex };
        expect(encodePoolKey(key)).toBe(canonicalJson(key));
      }
    }
  });

  it('refuses a string it did not make', () => {
    expect(() => decodePoolKey('{"caps":{},"multiplex":"yes"}')).toThrow(/not a pool key/);
    expect(() => decodePoolKey('{"principal":"p","multiplex":false}')).toThrow(/not a pool key/);
  });
});
