/** The fetch of HTTP backends, against a server on 127.0.0.1: a transport's one long-lived signal gathers no listener per request. */
import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWithOwnSignal } from '../../../src/core/backend/traced-fetch.js';

let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('fetchWithOwnSignal', () => {
  it('leaves no abort listener on the signal every request of a transport shares (undici keeps one per request until GC)', async () => {
    const transport = new AbortController();
    for (let i = 0; i < 200; i++) expect(await (await fetchWithOwnSignal(url, { signal: transport.signal })).text()).toBe('ok');
    expect(getEventListeners(transport.signal, 'abort')).toHaveLength(0);
  });

  it('still ends a request when the shared signal aborts', async () => {
    const transport = new AbortController();
    server.once('request', () => transport.abort(new Error('transport closed')));
    await expect(fetchWithOwnSignal(url, { signal: transport.signal })).rejects.toThrow('transport closed');
  });
});
