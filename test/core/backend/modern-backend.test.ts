/**
 * A 2026-07-28 backend's connect and list deadlines are tied to `close()`: a backend that accepts the
 * connection and never answers does not keep the gateway from closing (nor a timer alive).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type HttpServerConfig } from '../../../src/config.js';
import type { BackendCredentials } from '../../../src/core/backend/backend-credentials.js';
import { ModernBackend } from '../../../src/core/backend/modern-backend.js';
import { silentLogger } from '../../../src/log.js';
import { startModernServer } from '../../fixtures/modern-server.js';
import { until } from '../../helpers/until.js';

let silent: Server;
const sockets: Socket[] = [];
let url = '';
/** Bytes of requests it has read. */
let received = 0;
beforeAll(async () => {
  // Accepts connections, reads requests, answers nothing.
  silent = createServer((s) => sockets.push(s.on('data', (d: Buffer) => void (received += d.length))));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
});

/** A ModernBackend for the 2026-07-28 server at `at`, as its config entry makes it. */
function backendAt(at: string, credentials?: BackendCredentials): ModernBackend {
  const parsed = parseConfig({ mcpServers: { m: { url: at, protocol: '2026-07-28' } } });
  if (!parsed.ok) throw new Error(parsed.error.join('\n'));
  return new ModernBackend({
    server: parsed.value.servers[0] as HttpServerConfig,
    settings: parsed.value.gateway,
    clientInfo: { name: 't', version: '1' },
    logger: silentLogger,
    ...(credentials ? { credentials } : {}),
  });
}

describe('ModernBackend', () => {
  it('abandons a hanging connect and list when closed, at once', async () => {
    const backend = backendAt(url);
    const started = backend.start();
    const listing = backend.list('tools').then(
      () => 'listed',
      (e: unknown) => (e as Error).message,
    );
    await until('the connect to reach the silent backend', () => received > 0); // under way, and hanging
    // Under the 20 s connect deadline (not configurable): close() ended the wait. The bound is
    // generous (a loaded machine); how soon is for `npm run bench`.
    const closed = Promise.all([backend.close(), started]).then(() => 'closed');
    const bound = new Promise<string>((r) => setTimeout(() => r('still closing after 15 s'), 15_000).unref());
    expect(await Promise.race([closed, bound])).toBe('closed');
    expect(await listing).toBe('listed'); // closed while it connected: it lists nothing (unreachable and open, it is backend_unavailable)
    expect(backend.health()).toMatchObject({ state: expect.stringMatching(/down|connecting/) });
  });
});

describe('ModernBackend with credentials', () => {
  it('answers a call whose token cannot be had backend_unavailable: it was never sent, so it cannot have run', async () => {
    const modern = await startModernServer();
    let failing = false;
    const credentials = {
      token: () =>
        failing
          ? Promise.reject(new Error('the token endpoint of backend m is unreachable: http://127.0.0.1:9/token: no answer within 3000 ms'))
          : Promise.resolve('tok'),
      refused: () => undefined,
      close: () => undefined,
    };
    const backend = backendAt(modern.url, credentials);
    try {
      await backend.start();
      const params = { name: 'plain', arguments: { text: 'x' } };
      expect(await backend.request('tools/call', params, AbortSignal.timeout(10_000))).toMatchObject({ content: [{ text: 'modern:x' }] });
      failing = true; // the token expired, and its endpoint no longer answers
      const failed = await backend.request('tools/call', params, AbortSignal.timeout(10_000)).then(
        () => undefined,
        (e: unknown) => e as { code?: string; message: string },
      );
      // Was backend_closed, "whether the call reached it cannot be told: it may have run".
      expect(failed?.code, failed?.message).toBe('backend_unavailable');
      expect(failed?.message).not.toMatch(/may have run/);
    } finally {
      await backend.close();
      await modern.close();
    }
  });
});
