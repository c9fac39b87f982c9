/**
 * Single-use forwards between instances, over real HTTP on one real Redis: a retry that lands on the
 * instance that does not hold its call is forwarded to the owner; that forwarded request, captured in
 * transit and sent again (to the owner or to any other instance) within its signature's 30 s, is
 * refused with 403: it is signed for the owner's boot, whose memory spent its nonce. A forward signed
 * for no boot of the owner (the first, before the sender has heard it) is refused with 421, and sent
 * again for the boot id that answer names. Nothing of it goes through Redis.
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

/** Parks a call on A and sends its retry to B: the answer, and what B forwarded to A meanwhile. */
async function retryViaB(): Promise<{ answer: Awaited<ReturnType<typeof post>>; forwards: Forward[] }> {
  const parked = await post(a.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
  const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
  const key = Object.keys(ir.inputRequests)[0]!;
  const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
  const { value, forwards } = await capturingForwards(() => post(b.url, 'tools/call', retry, { caps: ELICIT }));
  return { answer: value, forwards };
}

/** Sends a captured forward again, to `target`: its status and error message. */
async function replay(forward: Forward, target = forward.url): Promise<{ status: number; message: string; replayed: string | null }> {
  const res = await fetch(target, { method: forward.method, headers: forward.headers, body: forward.body });
  return { status: res.status, message: ((await res.json()) as { error: { message: string } }).error.message, replayed: res.headers.get('x-mcpgw-replayed') };
}

describe('forwarded requests are single-use', () => {
  it("learns the owner's boot id from a first forward it refuses (421), serves the forward sent again for it once, and refuses either replayed", async () => {
    const { answer, forwards } = await retryViaB();
    expect(answer.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    // B had heard nothing of A yet: its first forward carried no boot id and was refused; it sent it again, signed for A's.
    expect(forwards.map((f) => f.headers.get('x-mcpgw-boot'))).toEqual([null, expect.stringMatching(/^[\w-]{16}$/)]);
    const [first, served] = forwards as [Forward, Forward];
    expect(new URL(served.url).origin).toBe(new URL(a.url).origin); // B forwarded it to A, the owner

    // To the owner: its nonce is spent. To another instance: the signature names the owner.
    // Marked as a replay's refusal: its sender tells its client the request may have run (forward_cut).
    expect(await replay(served)).toMatchObject({ status: 403, message: expect.stringContaining('already served once'), replayed: '1' });
    const atB = new URL('/_cluster/forward', b.url).href;
    expect(await replay(served, atB)).toMatchObject({ status: 403, message: expect.stringContaining('not a request forwarded by an instance') });
    // The first one was never served, and never will be: it is signed for no boot of A.
    expect(await replay(first)).toMatchObject({ status: 421, message: expect.stringContaining('Misdirected') });
  });

  it("signs later forwards for the owner's boot at once, and writes nothing to Redis for any forward", async () => {
    await retryViaB(); // B has heard A's boot id by now (the test before may not have run alone)
    const { answer, forwards } = await retryViaB();
    expect(answer.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    expect(forwards).toHaveLength(1);
    expect(forwards[0]!.headers.get('x-mcpgw-boot')).toMatch(/^[\w-]{16}$/);
    const client = createClient({ url: REDIS_URL });
    await client.connect();
    try {
      const nonces: string[] = [];
      for await (const batch of client.scanIterator({ MATCH: `${prefix}nonce:*`, COUNT: 500 })) nonces.push(...batch);
      expect(nonces).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

describe('the internal path to someone else', () => {
  it('refuses an unsigned POST on its headers, before its body (4 MiB declared, 1 KiB sent) is read', async () => {
    const url = new URL('/_cluster/forward', b.url);
    const status = await new Promise<number>((resolve, reject) => {
      const out = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': 4 * 1024 * 1024 },
        },
        (res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
          out.destroy();
        },
      );
      out.on('error', (e) => (out.destroyed ? undefined : reject(e)));
      out.write('x'.repeat(1024)); // and nothing more: an answer needs no more of it
      // An instance that waits for the rest of the body answers nothing: told as such, not as a test timeout.
      setTimeout(() => reject(new Error('no answer before the body was sent: the body is read first')), 10_000).unref();
    });
    expect(status).toBe(403);
  });
});
