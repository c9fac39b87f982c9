/**
 * Single-use nonces on a real Redis: one accept per nonce across instances (two connections), forgotten
 * when their ttl ends; and on a redis-server of this test's own that it stops: the check fails closed
 * (a forwarded request is refused with `cluster_unavailable`, never served on trust), within its deadline.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createForwarder } from '../../src/cluster/forwarder.js';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis/connection.js';
import { RedisNonces } from '../../src/cluster/redis/nonces.js';
import { GatewayError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { freePort } from '../helpers/processes.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const connections: RedisConnection[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => c.close()));
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function connect(url: string, prefix: string): Promise<RedisConnection> {
  const c = await connectRedis({ url, prefix, logger: silentLogger, connectTimeoutMs: 2_000 });
  connections.push(c);
  return c;
}

/** A redis-server of this test's own on `port` (no persistence); resolves once it answers. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await until('redis-server to start (or exit)', async () => {
    if (child.exitCode !== null) return true;
    const probe = await connectRedis({ url: `redis://127.0.0.1:${port}`, logger: silentLogger, connectTimeoutMs: 500 }).catch(() => undefined);
    await probe?.close();
    return probe !== undefined;
  });
  if (child.exitCode !== null) throw new Error('redis-server did not start');
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

const own: ChildProcess[] = [];
afterAll(async () => {
  await Promise.all(own.map(stop));
});

/** A forwarded POST as instance `from` signs it, captured instead of sent. */
async function capturedForward(secret: string): Promise<Request> {
  let captured: Request | undefined;
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (url: URL, init: RequestInit) => {
    captured = new Request(url, init);
    return new Response('{}');
  }) as typeof fetch;
  try {
    const fwd = createForwarder({ secret, urlOf: async () => 'http://127.0.0.1:1' });
    await fwd.send('b', '/mcp', new Request('http://gw/mcp', { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{}' }), '{}');
  } finally {
    globalThis.fetch = realFetch;
  }
  return captured!;
}

describe('forward nonces on Redis', () => {
  it('accepts a nonce once across instances, and again only after its ttl', async () => {
    const { prefix, cleanup } = redisPrefix();
    cleanups.push(cleanup);
    const a = new RedisNonces(await connect(REDIS_URL, prefix));
    const b = new RedisNonces(await connect(REDIS_URL, prefix));
    const attempts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).accept('n-1', 60_000)));
    expect(attempts.filter(Boolean)).toHaveLength(1);
    expect(await a.accept('n-2', 150)).toBe(true);
    expect(await b.accept('n-2', 150)).toBe(false);
    // Accepted again once the ttl (Redis' own clock) has run out.
    await until('the nonce to expire', () => b.accept('n-2', 150));
  });

  it('refuses a captured forward replayed to another instance of the cluster', async () => {
    const { prefix, cleanup } = redisPrefix();
    cleanups.push(cleanup);
    const req = await capturedForward('s3cret');
    const verifierA = createForwarder({ secret: 's3cret', urlOf: async () => undefined, nonces: new RedisNonces(await connect(REDIS_URL, prefix)) });
    const verifierB = createForwarder({ secret: 's3cret', urlOf: async () => undefined, nonces: new RedisNonces(await connect(REDIS_URL, prefix)) });
    expect((await verifierA.verify(req.clone(), '{}')).ok).toBe(true);
    expect(await verifierB.verify(req.clone(), '{}')).toEqual({ ok: false, error: 'replayed' });
    expect(await verifierA.verify(req.clone(), '{}')).toEqual({ ok: false, error: 'replayed' });
  });

  it('fails closed with cluster_unavailable while Redis is away, and accepts fresh forwards once it is back', async () => {
    const port = await freePort();
    const server = await startRedis(port);
    own.push(server);
    const url = `redis://127.0.0.1:${port}`;
    const verifier = createForwarder({ secret: 's3cret', urlOf: async () => undefined, nonces: new RedisNonces(await connect(url, 'nonce-test:')) });
    expect((await verifier.verify(await capturedForward('s3cret'), '{}')).ok).toBe(true);
    await stop(server);
    const started = Date.now();
    const thrown = await verifier.verify(await capturedForward('s3cret'), '{}').then(
      (r) => r,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(GatewayError);
    expect((thrown as GatewayError).code).toBe('cluster_unavailable');
    // Its deadline is 2 s; the bound is generous (a loaded machine): it says it does not wait for Redis.
    expect(Date.now() - started).toBeLessThan(15_000);
    own.push(await startRedis(port)); // back, empty
    let verdict: Awaited<ReturnType<typeof verifier.verify>> | undefined;
    await until(
      'a verdict with Redis back',
      async () => (verdict = await verifier.verify(await capturedForward('s3cret'), '{}').catch(() => undefined)) !== undefined,
    );
    expect(verdict?.ok).toBe(true);
  });
});
