/**
 * A forward signed for an earlier run of its owner, over real HTTP on one real Redis: instance B has
 * heard A's boot id; A restarts with the same id and internal URL before B sees it gone (a long
 * heartbeat), so B's next forward is signed for the old boot. The new A answers 421 with its boot id,
 * B sends the forward again signed for it, and the retry is served once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { noMetrics, type Metrics } from '../../src/observe/metrics.js';
import { randomStateKey, type StateKey } from '../../src/protocol/request-state.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/processes.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
const running: RunningGateway[] = [];
afterAll(async () => {
  await Promise.all(running.map((g) => g.close()));
  await cleanup();
});

/** One instance of the cluster on `port`, its internal URL that port; a heartbeat long enough that no restart in this test is seen as a death. */
async function instance(id: string, port: number, stateKeys: StateKey[], metrics?: Metrics): Promise<RunningGateway> {
  const cluster = { redis: REDIS_URL, keyPrefix: prefix, instanceId: id, heartbeatMs: 10_000, internalUrl: `http://127.0.0.1:${port}` };
  const gw = await startGateway(
    { mcpServers: { legacy: stdioFixture() }, gateway: { coalesceMs: 0, cluster } },
    { stateKeys, port, clusterSecret: `cluster-secret-${prefix}`, ...(metrics ? { metrics } : {}) },
  );
  running.push(gw);
  return gw;
}

/** Parks a call on `owner` and sends its retry to `via`; the retry's answer. */
async function retryVia(owner: RunningGateway, via: RunningGateway): Promise<Record<string, unknown>> {
  const parked = await post(owner.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
  const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
  const key = Object.keys(ir.inputRequests)[0]!;
  const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
  return (await post(via.url, 'tools/call', retry, { caps: ELICIT })).message;
}

describe("a forward signed for its owner's earlier run", () => {
  it('is answered 421 by the restarted owner and sent again, signed for its new boot: served once', async () => {
    const stateKeys = [await randomStateKey()];
    const [portA, portB] = [await freePort(), await freePort()];
    const a = await instance('a', portA, stateKeys);
    const sent: string[] = [];
    const b = await instance('b', portB, stateKeys, { ...noMetrics, forward: (direction, outcome) => void (direction === 'sent' && sent.push(outcome)) });
    expect(await retryVia(a, b)).toMatchObject({ result: { content: [{ type: 'text', text: 'Hello, Ada!' }] } }); // B hears A's boot id

    await a.close();
    running.splice(running.indexOf(a), 1);
    const received: string[] = [];
    const again = await instance('a', portA, stateKeys, {
      ...noMetrics,
      forward: (direction, outcome) => void (direction === 'received' && received.push(outcome)),
    });

    sent.length = 0;
    expect(await retryVia(again, b)).toMatchObject({ result: { content: [{ type: 'text', text: 'Hello, Ada!' }] } });
    expect(received).toEqual(['misdirected', 'accepted']);
    // B was asked once and sent it again itself (a 421 that reached a fetch client would be sent again by the client).
    expect(sent).toEqual(['answered']);
  });
});
