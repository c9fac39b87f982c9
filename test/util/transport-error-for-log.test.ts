import { describe, expect, it } from 'vitest';
import { transportErrorForLog } from '../../src/util/transport-error-for-log.js';

describe('transportErrorForLog', () => {
  it("keeps the SDK's unknown-id error and its id, never the message it quotes", () => {
    const message = JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'Hello, secret-answer-1' }] } });
    expect(transportErrorForLog(`Received a response for an unknown message ID: ${message}`)).toBe('Received a response for an unknown message ID: 7');
    const named = JSON.stringify({ jsonrpc: '2.0', id: 'abc', error: { code: 1, message: 'token=secret-2' } });
    expect(transportErrorForLog(`Received a response for an unknown message ID: ${named}`)).toBe('Received a response for an unknown message ID: "abc"');
  });

  it('hides what JSON.parse quotes of a line that is not JSON, and a quoted object', () => {
    let parseError = '';
    try {
      JSON.parse('hello secret-3 world');
    } catch (e) {
      parseError = (e as Error).message;
    }
    expect(parseError).toContain('secret-3'); // what Node says
    const shown = transportErrorForLog(parseError);
    expect(shown).not.toContain('secret-3');
    expect(shown).toMatch(/not valid JSON/);
    expect(transportErrorForLog('bad message {"token":"secret-4"} here')).toBe('bad message {…} here');
    expect(transportErrorForLog('cut "secret-5')).toBe('cut "…"');
  });

  it('leaves an error that quotes nothing as it is, clipped', () => {
    expect(transportErrorForLog('SSE stream disconnected: socket hang up')).toBe('SSE stream disconnected: socket hang up');
    expect(transportErrorForLog('x'.repeat(1000))).toHaveLength(301);
  });
});
