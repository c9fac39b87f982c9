/**
 * A client that leaves while its retry is forwarded to the instance that holds the call: the forward
 * ends with it, counted as `client_gone`; the owner is not taken for unreachable (no warning, no
 * `unreachable` count, and the next forward to it goes straight through).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../src/observe/metrics.js';
import type { RunningGateway } from '../helpers/gateway.js';
import { stdioFixture } from '../helpers/gateway.js';
import { startCluster } from '../helpers/cluster.js';
import { captureLog } from '../helpers/log.js';
import { redisPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
let owner: RunningGateway;
let other: RunningGateway;
const metrics: Record<string, Metrics> = {};
const logs: Record<string, ReturnType<typeof captureLog>> = {};

beforeAll(async () => {
  const started = await startCluster(['o', 'f'], {
    prefix,
    mcpServers: { legacy: stdioFixture() },
    deps: (id) => {
      metrics[id] = createMetrics();
      logs[id] = captureLog('info');
      return { metrics: metrics[id], logger: logs[id].logger };
    },
  });
  owner = started[0]!;
  other = started[1]!;
});
afterAll(async () => {
  await owner?.close();
  await other?.close();
  await cleanup();
});

/** Parks `elicit_then_work` on the owner; the retry that answers it then works `ms`. */
async function parked(ms: number): Promise<Record<string, unknown>> {
  const first = await post(owner.url, 'tools/call', { name: 'elicit_then_work', arguments: { ms } }, { caps: ELICIT });
  const ir = first.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
  const key = Object.keys(ir.inputRequests)[0]!;
  return {
    name: 'elicit_then_work',
    arguments: { ms },
    inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
    requestState: ir.requestState,
  };
}

const forwardsSent = async (id: string): Promise<string[]> =>
  (await metrics[id]!.scrape()).text.split('\n').filter((l) => l.startsWith('mcp_gateway_forwards_total{direction="sent"'));

describe('a client that leaves a forwarded retry', () => {
  it('ends the forward as client_gone, and the owner stays reachable', async () => {
    const retry = await parked(60_000);
    const left = new AbortController();
    const leaving = post(other.url, 'tools/call', retry, { caps: ELICIT, signal: left.signal }).then(
      () => 'answered',
      () => 'left',
    );
    // Once the owner has the retry (its call works now), the client leaves.
    await until('the forwarded retry to reach the owner', ownerReceived);
    left.abort();
    expect(await leaving).toBe('left');
    await until('the forward to be counted', async () => (await forwardsSent('f')).length > 0);
    expect(await forwardsSent('f')).toEqual([expect.stringMatching(/outcome="client_gone"\} 1$/)]);
    expect(logs['f']!.lines.filter((l) => String(l['msg']).includes('could not be reached'))).toEqual([]);
    // The next retry forwarded to the same owner is served there.
    const done = await post(other.url, 'tools/call', await parked(0), { caps: ELICIT });
    expect(done.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    expect(await forwardsSent('f')).toEqual(
      expect.arrayContaining([expect.stringMatching(/outcome="answered"\} 1$/), expect.stringMatching(/outcome="client_gone"\} 1$/)]),
    );
  }, 60_000);
});

/** Whether the owner accepted the forwarded retry. */
async function ownerReceived(): Promise<boolean> {
  const received = (await metrics['o']!.scrape()).text
    .split('\n')
    .find((l) => l.startsWith('mcp_gateway_forwards_total{direction="received",outcome="accepted"}'));
  return received !== undefined && / 1$/.test(received);
}
