/**
 * A backend that fails to start is explained, not hidden: the cause (`spawn … ENOENT`, the process's
 * last stderr lines) is logged at warn with the attempt and the backoff, and `GET /readyz` shows each
 * backend's state while the gateway keeps serving the others.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModernServer } from '../fixtures/modern-server.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/processes.js';
import { readyzThroughOutage } from '../helpers/readiness.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  },
});

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(
    {
      mcpServers: {
        good: stdioFixture(),
        missing: { command: '/nonexistent/mcp-server-that-is-not-installed' },
        noisy: { command: process.execPath, args: ['-e', "console.error('fatal: DATABASE_URL is not set'); process.exit(1)"] },
      },
    },
    { logger: pino({ level: 'info' }, sink) },
  );
});
afterAll(async () => gw?.close());

describe('backend health', () => {
  it('logs why a backend did not start, at warn, with its stderr and the retry delay', () => {
    const warn = lines.filter((l) => l['level'] === 40 && l['msg'] === 'backend unavailable; retrying with backoff');
    const missing = warn.find((l) => l['backend'] === 'missing');
    expect(missing).toMatchObject({ err: expect.stringMatching(/ENOENT/), attempt: 1, retryInMs: expect.any(Number) });
    const noisy = warn.find((l) => l['backend'] === 'noisy');
    expect(noisy?.['stderr']).toEqual(expect.arrayContaining([expect.stringMatching(/DATABASE_URL is not set/)]));
  });

  it('logs a backend that ends its session with a call in flight at warn, with its exit code, and the call fails backend_closed', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'good__crash', arguments: {} });
    expect(r.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_closed' } });
    const ended = () => lines.find((l) => l['level'] === 40 && l['msg'] === 'backend session ended with calls in flight: they fail backend_closed');
    await until('the warn line', () => ended() !== undefined);
    expect(ended()).toMatchObject({ backend: 'good', calls: 1, exitCode: 3, exitSignal: null, stderr: expect.any(Array) });
  });

  it('reports each backend on /readyz: degraded while one is up, with the causes', async () => {
    const res = await fetch(new URL('/readyz', gw.url));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; backends: { name: string; state: string; lastError?: string; stderr?: unknown }[] };
    expect(body.status).toBe('degraded');
    expect(body.backends.map((b) => [b.name, b.state])).toEqual([
      ['good', 'up'],
      ['missing', 'down'],
      ['noisy', 'down'],
    ]);
    expect(body.backends[1]!.lastError).toMatch(/ENOENT/);
    expect(body.backends.every((b) => b.stderr === undefined)).toBe(true);
  });
});

describe('a 2026-07-28 backend on /readyz', () => {
  it('is asked again on each request: a server that answered before and went away is shown down, and up again once it is back', async () => {
    const port = await freePort();
    let modern = await startModernServer(undefined, port);
    const alone = await startGateway({ mcpServers: { modern: { url: modern.url, protocol: '2026-07-28' } } });
    try {
      const answered = async (): Promise<void> => void expect((await post(alone.url, 'tools/list', {})).message['result']).toBeDefined();
      modern = await readyzThroughOutage(alone.url, answered, modern, () => startModernServer(undefined, port));
    } finally {
      await alone.close();
      await modern.close();
    }
  });
});
