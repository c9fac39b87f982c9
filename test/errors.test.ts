/** What an error looks like on the wire (errors.ts `toWireError`). */
import { describe, expect, it } from 'vitest';
import { GatewayError, toWireError } from '../src/errors.js';

describe('toWireError', () => {
  it("keeps a JSON-RPC error's code, bare message and data", () => {
    const wire = Object.assign(new Error('MCP error -32602: Invalid arguments'), { code: -32602, data: { field: 'x' } });
    expect(toWireError(wire)).toEqual({ code: -32602, message: 'Invalid arguments', data: { field: 'x' } });
  });

  it('answers a gateway error as -32603 with its reason', () => {
    expect(toWireError(new GatewayError('backend_timeout', 'web'))).toMatchObject({ code: -32603, data: { reason: 'backend_timeout' } });
  });

  it("never takes a DOMException's legacy code (23 for a timeout, 20 for an abort) for a JSON-RPC one", () => {
    expect(toWireError(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toEqual({ code: -32603, message: 'Internal error' });
    expect(toWireError(new DOMException('This operation was aborted', 'AbortError'))).toEqual({ code: -32603, message: 'Internal error' });
  });

  it('hides what any other error says', () => {
    expect(toWireError(new Error('secret path /home/x'))).toEqual({ code: -32603, message: 'Internal error' });
    expect(toWireError(Object.assign(new Error('odd'), { code: 1.5 }))).toEqual({ code: -32603, message: 'Internal error' });
  });
});
