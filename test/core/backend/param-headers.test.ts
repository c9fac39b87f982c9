/** SEP-2243 headers the gateway sends a 2026-07-28 backend: what the server-side check accepts. */
import { describe, expect, it } from 'vitest';
import { paramHeadersFor } from '../../../src/core/backend/param-headers.js';
import { checkParamHeaders } from '../../../src/protocol/rev-2026-07-28/param-headers.js';

const SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    count: { type: 'number', 'x-mcp-header': 'Count' },
    dry: { type: 'boolean', 'x-mcp-header': 'Dry' },
    note: { type: 'string' },
  },
};

/** The headers as the server reads them (lower-case names, without the prefix). */
const asReceived = (headers: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.slice('Mcp-Param-'.length).toLowerCase(), v]));

describe('paramHeadersFor', () => {
  it('mirrors each x-mcp-header argument, plain ASCII as is, anything else base64, and the check accepts them', () => {
    for (const args of [
      { region: 'us-west1', count: 3, dry: false, note: 'x' },
      { region: 'Zürich ✓', count: 1.5 },
      { region: ' padded ', count: 0 },
      { region: '=?base64?looks-encoded?=' },
      {},
    ]) {
      const headers = paramHeadersFor(SCHEMA, args);
      expect(() => checkParamHeaders(SCHEMA, args, asReceived(headers)), JSON.stringify(args)).not.toThrow();
    }
    expect(paramHeadersFor(SCHEMA, { region: 'us-west1', count: 3, dry: true, note: 'x' })).toEqual({
      'Mcp-Param-Region': 'us-west1',
      'Mcp-Param-Count': '3',
      'Mcp-Param-Dry': 'true',
    });
    expect(paramHeadersFor(SCHEMA, { region: 'Zürich' })).toEqual({ 'Mcp-Param-Region': `=?base64?${btoa('Z\xc3\xbcrich')}?=` });
  });

  it('sends nothing for a tool it does not know, arguments that are not objects or primitives, or a name that is no HTTP token', () => {
    expect(paramHeadersFor(undefined, { region: 'x' })).toEqual({});
    expect(paramHeadersFor(SCHEMA, 'x')).toEqual({});
    expect(paramHeadersFor(SCHEMA, { region: { nested: 1 }, count: null })).toEqual({});
    const badName = { properties: { region: { type: 'string', 'x-mcp-header': 'Bad Name\r\n' } } };
    expect(paramHeadersFor(badName, { region: 'x' })).toEqual({});
  });
});
