/**
 * Single-use forwards between instances, over real HTTP on one real Redis: a retry that lands on the
 * instance that does not hold its call is forwarded to the owner; that forwarded request, captured in
 * transit and sent again (to the owner or to any other instance) within its signature's 30 s, is
 * refused with 403 — its nonce was spent cluster-wide. Once the sender has heard the owner's boot id
 * (every answer to a forward carries it), its forwards are signed for that boot and spend their nonce
 * in the owner's memory alone: no Redis write, and a replay is still refused.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster } from '../helpers/cluster.js';
import { stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { createClient } from 'redis';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
let a: RunningGateway;
let b: RunningGateway;

interface Forward {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly body: string;
}

/**
 * A recording relay on 127.0.0.1 in front of instance A's port: what another instance forwards to A
 * passes through it (A's internal URL is the relay's), and a copy of each request is kept.
 */
const relay = {
  server: createServer(),
  target: 0,
  forwards: [] as Forward[],
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  },
};
relay.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string' && name !== 'host') headers.set(name, value);
    relay.forwards.push({ url: `http://127.0.0.1:${relay.target}${req.url}`, method: req.method ?? 'POST', headers, body });
    const out = request({ host: '127.0.0.1', port: relay.target, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    out.end(body);
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => relay.server.listen(0, '127.0.0.1', resolve));
  const internalUrl = (id: string, port: number): string => {
    if (id !== 'a') return `http://127.0.0.1:${port}`;
    relay.target = port;
    return relay.url;
  };
  [a, b] = (await startCluster(['a', 'b'], { prefix, mcpServers: { legacy: stdioFixture() }, internalUrl })) as [RunningGateway, RunningGateway];
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  relay.server.closeAllConnections();
  await new Promise((r) => relay.server.close(r));
  await cleanup();
});

/** Runs `work` and returns what was forwarded to A meanwhile. */
async function capturingForwards<T>(work: () => Promise<T>): Promise<{ value: T; forwards: Forward[] }> {
  relay.forwards.length = 0;
  const value = await work();
  return { value, forwards: relay.forwards.filter((f) => new URL(f.url).pathname === '/_cluster/forward') };
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

  it("signs later forwards for the owner's boot: served with no nonce written to Redis, and a replay still refused", async () => {
    const nonceKeys = async (): Promise<number> => {
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      try {
        let n = 0;
        for await (const batch of client.scanIterator({ MATCH: `${prefix}nonce:*`, COUNT: 500 })) n += batch.length;
        return n;
      } finally {
        await client.close();
      }
    };
    const retryVia = async (): Promise<{ answer: Awaited<ReturnType<typeof post>>; forwards: Forward[] }> => {
      const parked = await post(a.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
      const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
      const key = Object.keys(ir.inputRequests)[0]!;
      const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
      const { value, forwards } = await capturingForwards(() => post(b.url, 'tools/call', retry, { caps: ELICIT }));
      return { answer: value, forwards };
    };
    await retryVia(); // B has heard A's boot id by now (the test before may not have run alone)
    const written = await nonceKeys();
    const { answer, forwards } = await retryVia();
    expect(answer.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    expect(forwards).toHaveLength(1);
    expect(forwards[0]!.headers.get('x-mcpgw-boot')).toMatch(/^[\w-]{16}$/);
    expect(await nonceKeys()).toBe(written);
    const replay = await fetch(forwards[0]!.url, { method: 'POST', headers: forwards[0]!.headers, body: forwards[0]!.body });
    expect(replay.status).toBe(403);
    expect(((await replay.json()) as { error: { message: string } }).error.message).toContain('already served once');
  });
});
