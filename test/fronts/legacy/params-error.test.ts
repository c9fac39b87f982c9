import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { readableParamsError } from '../../../src/fronts/legacy/params-error.js';

const dump = (issues: unknown): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: `Invalid tools/call request: ${JSON.stringify(issues, null, 2)}` } }) as JSONRPCMessage;

describe('readableParamsError', () => {
  it("says the SDK's zod dump as one line of paths and messages", () => {
    const issues = [
      { expected: 'string', code: 'invalid_type', path: ['params', 'name'], message: 'Invalid input: expected string, received undefined' },
      { code: 'custom', path: [], message: 'odd' },
    ];
    expect(readableParamsError(dump(issues))).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32602, message: 'Invalid tools/call request: params.name: Invalid input: expected string, received undefined; odd' },
    });
  });

  it('leaves every other message as it is', () => {
    const others = [
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Unknown tool: x' } },
      { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Invalid tools/call request: [1]' } },
      { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Invalid tools/call request: [not json' } },
      { jsonrpc: '2.0', method: 'notifications/message', params: {} },
    ] as JSONRPCMessage[];
    for (const m of others) expect(readableParamsError(m)).toBe(m);
  });
});
