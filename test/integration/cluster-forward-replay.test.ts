/**
 * Single-use forwards between instances, over real HTTP on one real Redis: a retry that lands on the
 * instance that does not hold its call is forwarded to the owner; that forwarded request, captured in
 * transit and sent again (to the owner or to any other instance) within its signature's 30 s, is
 * refused with 403 — its nonce was spent cluster-wide.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster } from '../helpers/cluster.js';
import { stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { redisPrefix } from '../helpers/redis.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
let a: RunningGateway;
let b: RunningGateway;

beforeAll(async () => {
  [a, b] = (await startCluster(['a', 'b'], { prefix, mcpServers: { legacy: stdioFixture() } })) as [RunningGateway, RunningGateway];
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await cleanup();
});

/** Runs `work` while recording (a copy of) every request an instance forwards to another. */
async function capturingForwards<T>(
  work: () => Promise<T>,
): Promise<{ value: T; forwards: { url: string; method: string; headers: Headers; body: string }[] }> {
  const forwards: { url: string; method: string; headers: Headers; body: string }[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const req = new Request(input, init);
    if (new URL(req.url).pathname === '/_cluster/forward') {
      forwards.push({ url: req.url, method: req.method, headers: new Headers(req.headers), body: await req.clone().text() });
    }
    return realFetch(req);
  }) as typeof fetch;
  try {
    return { value: await work(), forwards };
  } finally {
    globalThis.fetch = realFetch;
  }
}

describe('forwarded requests are single-use', () => {
  it('refuses a captured instance-to-instance forward replayed to the owner or to another instance (403), after serving it once', async () => {
    const parked = await post(a.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
    const { value: done, forwards } = await capturingForwards(() => post(b.url, 'tools/call', retry, { caps: ELICIT }));
    expect(done.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    expect(forwards).toHaveLength(1);
    const captured = forwards[0]!;
    expect(new URL(captured.url).origin).toBe(new URL(a.url).origin); // B forwarded it to A, the owner

    // To the owner: its nonce is spent. To another instance: the signature names the owner.
    const refusals = { [captured.url]: 'already served once', [new URL('/_cluster/forward', b.url).href]: 'not a request forwarded by an instance' };
    for (const [target, why] of Object.entries(refusals)) {
      const replay = await fetch(target, { method: captured.method, headers: captured.headers, body: captured.body });
      expect(replay.status).toBe(403);
      const body = (await replay.json()) as { error: { message: string } };
      expect(body.error.message).toContain(why);
    }
  });
});
