/**
 * Two gateway instances on one real Redis (first step of the cluster): the parked-call bound holds
 * across them, a retry that lands on the instance that does not hold the call is told which case it is
 * (`request_state_instance` while the owner lives; forwarding comes next), and an instance that leaves
 * makes its calls `request_state_gone` at once everywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomStateKey } from '../../src/protocol/request-state.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
let a: RunningGateway;
let b: RunningGateway;

beforeAll(async () => {
  const stateKeys = [await randomStateKey()]; // every instance opens every instance's requestState
  const config = (instanceId: string) => ({
    mcpServers: { legacy: stdioFixture() },
    gateway: { coalesceMs: 0, maxParkedTotal: 1, cluster: { redis: REDIS_URL, keyPrefix: prefix, instanceId, heartbeatMs: 200 } },
  });
  a = await startGateway(config('a'), { stateKeys });
  b = await startGateway(config('b'), { stateKeys });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await cleanup();
});

describe('two instances on Redis', () => {
  it('share the parked-call bound, tell a retry which instance holds its call, and give up the calls of an instance that left', async () => {
    const parked = await post(a.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    const ir = parked.message['result'] as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(ir.resultType).toBe('input_required');

    // maxParkedTotal is 1 for the whole cluster: B may not park another call.
    const refused = await post(b.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    expect(refused.message['error']).toMatchObject({ data: { reason: 'parked_call_limit' } });

    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
    const elsewhere = await post(b.url, 'tools/call', retry, { caps: ELICIT });
    expect(elsewhere.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_instance' } });

    await a.close(); // A leaves the cluster
    const gone = await post(b.url, 'tools/call', retry, { caps: ELICIT });
    expect(gone.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_gone' } });
    // and its unit of the bound went with it
    const now = await post(b.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    expect((now.message['result'] as { resultType: string }).resultType).toBe('input_required');
  });
});
