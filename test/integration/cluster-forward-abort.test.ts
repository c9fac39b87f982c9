/**
 * A client that goes away from a forwarded retry, over real HTTP on one real Redis: B forwards the
 * retry to A, which holds the call; the call goes on working after the answer. The client leaves:
 * B's answer ends, its forward to A is aborted, A's answer ends, and the call is cancelled on its
 * backend, as it is when the client leaves the owner itself (a client that goes away while its round
 * waits cancels the call).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster } from '../helpers/cluster.js';
import { stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { redisPrefix } from '../helpers/redis.js';
import { fileHas, until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
const logs = mkdtempSync(join(tmpdir(), 'forward-abort-'));
const callLog = join(logs, 'calls.log');
const cancelLog = join(logs, 'cancel.log');
let a: RunningGateway;
let b: RunningGateway;

beforeAll(async () => {
  [a, b] = (await startCluster(['a', 'b'], {
    prefix,
    mcpServers: { legacy: stdioFixture({ FIXTURE_CALL_LOG: callLog, FIXTURE_CANCEL_LOG: cancelLog }) },
  })) as [RunningGateway, RunningGateway];
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await cleanup();
});

describe('a forwarded retry whose client goes away', () => {
  it('ends the forward, and the call on the instance that holds it is cancelled', async () => {
    const parked = await post(a.url, 'tools/call', { name: 'elicit_then_wait', arguments: { id: 'left' } }, { caps: ELICIT });
    const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = {
      name: 'elicit_then_wait',
      arguments: { id: 'left' },
      inputResponses: { [key]: { action: 'accept', content: { x: 'y' } } },
      requestState: ir.requestState,
    };
    const client = new AbortController();
    const leaving = post(b.url, 'tools/call', retry, { caps: ELICIT, fetch: (url, init) => fetch(url, { ...init, signal: client.signal }) });
    leaving.catch(() => undefined);
    // The answer reached the backend through B and A: the call works on.
    await until('the backend to have its answer', () => fileHas(callLog, 'answered left'));
    client.abort();
    await until('the call to be cancelled on its backend', () => fileHas(cancelLog, 'cancelled left'));
    await expect(leaving).rejects.toThrow();
  });
});
