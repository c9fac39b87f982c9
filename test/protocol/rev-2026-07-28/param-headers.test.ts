import { describe, expect, it } from 'vitest';
import { checkParamHeaders } from '../../../src/protocol/rev-2026-07-28/param-headers.js';
import { decodeHeaderValue } from '../../../src/protocol/rev-2026-07-28/envelope.js';

const schema = {
  type: 'object',
  properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, priority: { type: 'integer', 'x-mcp-header': 'Priority' }, q: { type: 'string' } },
};

describe('SEP-2243 headers', () => {
  it('decodes =?base64?…?= strictly and passes plain values through', () => {
    expect(decodeHeaderValue(`=?base64?${Buffer.from('héllo').toString('base64')}?=`)).toBe('héllo');
    expect(decodeHeaderValue('=?base64?SGVsbG8?=')).toBeUndefined(); // bad padding
    expect(decodeHeaderValue('=?base64?SGVs!!!bG8=?=')).toBeUndefined();
    expect(decodeHeaderValue('=?base64?SGVsbG8=')).toBe('=?base64?SGVsbG8='); // no suffix: literal
    expect(decodeHeaderValue('  spaced  ')).toBe('spaced');
    expect(decodeHeaderValue('caf\u00e9')).toBeUndefined();
  });

  it('requires mirrored headers that match the arguments (-32020)', () => {
    expect(() => checkParamHeaders(schema, { region: 'eu', priority: 1 }, { region: 'eu', priority: '1' })).not.toThrow();
    expect(() => checkParamHeaders(schema, { region: 'eu', priority: 1 }, { region: 'eu', priority: '1.0' })).not.toThrow();
    expect(() => checkParamHeaders(schema, { region: 'eu' }, {})).toThrow(expect.objectContaining({ code: -32020 }));
    expect(() => checkParamHeaders(schema, { region: 'eu' }, { region: 'us' })).toThrow(expect.objectContaining({ code: -32020 }));
    expect(() => checkParamHeaders(schema, { region: null }, {})).not.toThrow();
    expect(() => checkParamHeaders(schema, { q: 'x' }, {})).not.toThrow();
    expect(() => checkParamHeaders(undefined, { region: 'eu' }, {})).not.toThrow();
  });
});
