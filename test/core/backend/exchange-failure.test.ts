/** How a failed exchange with a 2026-07-28 backend is told, from real fetch failures against 127.0.0.1. */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { exchangeFailure, neverSent } from '../../../src/core/backend/exchange-failure.js';
import { GatewayError } from '../../../src/errors.js';

const servers: { close(cb: () => void): void }[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
});

async function listening(server: Server | ReturnType<typeof createHttpServer>): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

const post = (url: string) =>
  fetch(url, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"tools/call"}' }).then(
    () => undefined,
    (e: unknown) => e,
  );

const reasonOf = (e: GatewayError): string => e.code;

describe('exchangeFailure', () => {
  it('tells a call that never reached the backend (connection refused) to retry later', async () => {
    const closed = await listening(createServer());
    await new Promise<void>((r) => servers.pop()!.close(() => r()));
    const e = await post(closed);
    expect(neverSent(e)).toBe(true);
    expect(reasonOf(exchangeFailure('core', 'tools/call', e))).toBe('backend_unavailable');
  });

  it('tells a tool call whose connection broke after the backend read it that it may have run (backend_closed)', async () => {
    const url = await listening(createServer((socket) => socket.once('data', () => socket.destroy())));
    const e = await post(url);
    expect(neverSent(e)).toBe(false);
    const failed = exchangeFailure('core', 'tools/call', e);
    expect(reasonOf(failed)).toBe('backend_closed');
    expect(failed.message).toMatch(/after the call was sent: it may have run/);
    // a list asked the same way is simply asked again later
    expect(reasonOf(exchangeFailure('core', 'tools/list', e))).toBe('backend_unavailable');
  });

  it('tells a call the backend refused with an HTTP status (the SDK says which) that it did not run, but not after a 500, 502 or 504', () => {
    const status = (n: number) => Object.assign(new Error(`Error POSTing to endpoint (HTTP ${n})`), { data: { status: n } });
    for (const n of [401, 403, 429, 503]) {
      const failed = exchangeFailure('core', 'tools/call', status(n));
      expect([reasonOf(failed), failed.message.includes(`HTTP ${n}`)], String(n)).toEqual(['backend_unavailable', true]);
    }
    for (const n of [500, 502, 504]) {
      const failed = exchangeFailure('core', 'tools/call', status(n));
      expect([reasonOf(failed), /it may have run/.test(failed.message)], String(n)).toEqual(['backend_closed', true]);
      expect(reasonOf(exchangeFailure('core', 'tools/list', status(n)))).toBe('backend_unavailable');
    }
  });

  it('says a codeless network error (workerd\'s "Network connection lost.") cannot tell whether the call reached the backend', () => {
    const failed = exchangeFailure('core', 'tools/call', new Error('Network connection lost.'));
    expect(reasonOf(failed)).toBe('backend_closed');
    expect(failed.message).toMatch(/whether the call reached it cannot be told: it may have run/);
  });
});
