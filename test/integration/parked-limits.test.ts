/** Parked calls are bounded per principal and in total; a call over the bound fails clearly and is cancelled. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { assertWireResponse, post } from '../helpers/wire.js';

const A = 'alice-key-0123456789';
const B = 'bob-key-0123456789ab';
let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: stdioFixture() },
    gateway: {
      maxParkedPerPrincipal: 2,
      maxParkedTotal: 3,
      apiKeys: [
        { principal: 'alice', key: A },
        { principal: 'bob', key: B },
      ],
    },
  });
});
afterAll(async () => gw?.close());

const park = (key: string) => post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: { elicitation: {} }, headers: { authorization: `Bearer ${key}` } });

describe('parked call limits', () => {
  it('refuses a third parked call for one principal and a fourth in total', async () => {
    for (const r of [await park(A), await park(A)]) expect(r.message['result']).toMatchObject({ resultType: 'input_required' });
    const third = await park(A);
    assertWireResponse('tools/call', third.message);
    expect(third.message['error']).toMatchObject({ code: -32603, data: { reason: 'parked_call_limit' } });
    expect((await park(B)).message['result']).toMatchObject({ resultType: 'input_required' });
    expect((await park(B)).message['error']).toMatchObject({ data: { reason: 'parked_call_limit' } });
    expect(gw.gateway.engine.size).toBe(3);
  });
});
