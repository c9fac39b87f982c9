/**
 * Backend sessions reconnect when lost: a streamable-HTTP backend that goes away makes its tools fail
 * with a clear error (not the gateway), and once it is back the gateway serves it again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startLegacyHttpServer, type LegacyHttpServer } from '../fixtures/legacy-http.js';
import { until } from '../helpers/until.js';
import { assertWireResponse, post } from '../helpers/wire.js';
import type { LegacyBackend } from '../../src/core/backend/legacy-backend.js';

let backend: LegacyHttpServer;
let gw: RunningGateway;

beforeAll(async () => {
  backend = await startLegacyHttpServer('recovering');
  gw = await startGateway({ mcpServers: { web: { url: backend.url } } });
});
afterAll(async () => {
  await gw?.close();
  await backend?.close();
});

describe('backend recovery', () => {
  it('fails calls clearly while the backend is down and serves again when it is back', async () => {
    const port = Number(new URL(backend.url).port);
    expect((await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'before' } })).message['result']).toMatchObject({
      content: [{ text: 'before' }],
    });
    await backend.close();
    const down = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'during' } });
    assertWireResponse('tools/call', down.message);
    expect(down.message['error']).toMatchObject({ code: -32603, data: { reason: expect.stringMatching(/^backend_/) } });
    expect((await fetch(new URL('/healthz', gw.url))).status).toBe(200);
    backend = await startLegacyHttpServer('recovering', port);
    let last: Record<string, unknown> = {};
    await until('a call to reach the restarted backend', async () => {
      last = (await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'after' } })).message;
      return last['result'] !== undefined;
    });
    expect(last['result']).toMatchObject({ content: [{ text: 'after' }] });
    const list = await post(gw.url, 'tools/list');
    expect((list.message['result'] as { tools: unknown[] }).tools.length).toBeGreaterThan(0);
  });

  it('replaces a session the backend no longer knows (backend restarted between calls)', async () => {
    const port = Number(new URL(backend.url).port);
    expect((await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'one' } })).message['result']).toMatchObject({ content: [{ text: 'one' }] });
    await backend.close();
    backend = await startLegacyHttpServer('recovering', port);
    // The first call may meet the stale session and fail cleanly: a 404, or its pooled connection to
    // the old process reset after it was written (backend_closed: it may have run, so it is not sent
    // again; the session is then pinged, and dropped on the ping's 404). The next one gets a new session.
    const b = gw.gateway.backends[0] as LegacyBackend;
    const first = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'two' } });
    if (first.message['error']) {
      expect(first.message['error']).toMatchObject({ code: -32603 });
      await until('the stale session to be dropped', () => b.stats.sessions === 0);
    }
    const second = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'three' } });
    expect(second.message['result']).toMatchObject({ content: [{ text: 'three' }] });
    // lists recover too: the stale primary session is dropped after its first failure and reconnects
    let tools: unknown[] = [];
    await until('a fresh tools list', async () => (tools = await b.list('tools', { fresh: true }).catch(() => [])).length > 0);
    expect(tools.length).toBeGreaterThan(0);
  });
});
