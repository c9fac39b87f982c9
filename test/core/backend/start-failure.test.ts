/** What a backend's failure says where every principal can read it (src/core/backend/start-failure.ts). */
import { describe, expect, it } from 'vitest';
import { StartFailure, causeText, withoutResponseBody } from '../../../src/core/backend/start-failure.js';

describe("a backend's failure as its health shows it", () => {
  it('leaves out the body of an HTTP error answer (it may echo a token the backend was sent)', () => {
    expect(withoutResponseBody('Error POSTing to endpoint (HTTP 401): denied for /mcp?token=SECRET auth=Bearer SECRET')).toBe(
      'Error POSTing to endpoint (HTTP 401) (its body not shown)',
    );
    expect(withoutResponseBody('Streamable HTTP error: Error POSTing to endpoint: {"token":"SECRET"}\nmore')).toBe(
      'Streamable HTTP error: Error POSTing to endpoint (its body not shown)',
    );
    expect(new StartFailure(new Error('x', { cause: new Error('Error POSTing to endpoint (HTTP 500): SECRET') }), []).message).not.toContain('SECRET');
  });

  it('keeps every other message as it is: the innermost of the chain', () => {
    expect(causeText(new Error('backend_unavailable', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') }))).toBe('connect ECONNREFUSED 127.0.0.1:9');
    expect(withoutResponseBody('spawn npx ENOENT')).toBe('spawn npx ENOENT');
  });
});
