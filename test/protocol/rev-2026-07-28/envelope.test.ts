/** What a 2025-era request is told on a 2026-07-28 endpoint: a session where one is served, never where none is (the edge). */
import { describe, expect, it } from 'vitest';
import { admit } from '../../../src/protocol/rev-2026-07-28/envelope.js';

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'v1', version: '1' } },
};
const http = { httpMethod: 'POST', protocolVersionHeader: undefined, mcpMethodHeader: undefined, mcpNameHeader: undefined, body: initialize };

describe('admit, a 2025-era request', () => {
  it('is pointed at a session on an endpoint that serves them', () => {
    const refused = admit(http);
    expect(refused).toMatchObject({ kind: 'reject', status: 400, id: 1, error: { code: -32022, data: { requested: '2025-11-25' } } });
    if (refused.kind !== 'reject') throw new Error('admitted');
    expect(refused.error.message).toMatch(/open one with initialize/);
    expect(refused.error.data).toMatchObject({ supported: expect.arrayContaining(['2026-07-28', '2025-11-25']) });
  });

  it('is told the endpoint serves 2026-07-28 only where no session is served, and offered nothing else', () => {
    const refused = admit({ ...http, servesSessions: false });
    if (refused.kind !== 'reject') throw new Error('admitted');
    expect(refused.error).toMatchObject({ code: -32022, data: { supported: ['2026-07-28'], requested: '2025-11-25' } });
    expect(refused.error.message).toMatch(/serves MCP 2026-07-28 only/);
    expect(refused.error.message).not.toMatch(/session here/);
  });
});
