import { describe, expect, it } from 'vitest';
import { GatewayError, ProtocolError, WireCode, invalidParams, requestStateError } from '../../src/errors.js';
import { errorOutcome, methodLabel, resultOutcome } from '../../src/observe/metric-labels.js';

describe('metric labels', () => {
  it('keeps MCP methods and names anything else other', () => {
    expect(methodLabel('tools/call')).toBe('tools/call');
    expect(methodLabel('tasks/get')).toBe('tasks/get');
    expect(methodLabel('tools/call/01J0000000000000000000000')).toBe('other');
    expect(methodLabel('constructor')).toBe('other');
  });

  it('reads a result type, and a legacy result without one as complete', () => {
    expect(resultOutcome({ resultType: 'input_required' })).toBe('input_required');
    expect(resultOutcome({ resultType: 'task' })).toBe('task');
    expect(resultOutcome({ content: [] })).toBe('complete');
    expect(resultOutcome({ resultType: 'made-up' })).toBe('complete');
  });

  it("names an error by the gateway's reason, else by the code the gateway uses, else error", () => {
    expect(errorOutcome(requestStateError('gone'))).toBe('request_state_gone');
    expect(errorOutcome(new GatewayError('backend_unavailable'))).toBe('backend_unavailable');
    expect(errorOutcome(invalidParams('bad', { reason: 'attacker-chosen-01J000' }))).toBe('invalid_params');
    expect(errorOutcome(new ProtocolError(WireCode.MethodNotFound, 'no'))).toBe('method_not_found');
    expect(errorOutcome(new ProtocolError(WireCode.HeaderMismatch, 'no'))).toBe('header_mismatch');
    // A backend's own code passes through to the client, not into a label.
    expect(errorOutcome(new ProtocolError(-31999, 'backend said so'))).toBe('error');
    expect(errorOutcome(new Error('boom'))).toBe('internal_error');
  });
});
