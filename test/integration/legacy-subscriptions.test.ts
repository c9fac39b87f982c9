/**
 * A legacy session's resource subscriptions end with the session, however it ends — a DELETE of a
 * streamable HTTP session, the 2024-11-05 `/sse` stream closing, the idle timeout — and the backend is
 * unsubscribed once the last session that wanted a URI has gone (fronts/legacy/session-registry.ts:
 * every session leaves through `remove`). Real v1 SDK clients, a real v1 backend over HTTP that says
 * what it is subscribed to, real sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { startSubscribableServer, type SubscribableServer } from '../fixtures/subscribable-http.js';

let backend: SubscribableServer;
let gw: RunningGateway;
beforeAll(async () => {
  backend = await startSubscribableServer();
  gw = await startGateway({ mcpServers: { sub: { url: backend.url } } });
});
afterAll(async () => {
  await gw?.close();
  await backend?.close();
});

async function overHttp(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'sub-http', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(gw.url));
  await client.connect(transport);
  return { client, transport };
}

describe('legacy sessions end their resource subscriptions when they end', () => {
  it('unsubscribes at the backend when the last streamable HTTP session subscribed to a URI is DELETEd', async () => {
    const URI = 'test://sub/deleted';
    // Only the first session wants MARKER: its unsubscribe is the barrier of the negative check below.
    const MARKER = 'test://sub/deleted-marker';
    const [first, second] = [await overHttp(), await overHttp()];
    expect(first.client.getServerCapabilities()?.resources?.subscribe).toBe(true);
    await first.client.subscribeResource({ uri: URI });
    await first.client.subscribeResource({ uri: MARKER });
    await second.client.subscribeResource({ uri: URI });
    expect(backend.subscribed.has(URI)).toBe(true);

    await first.transport.terminateSession();
    // The session's subscriptions end in the order they were made: once MARKER (made after URI) is
    // unsubscribed, an unsubscribe of URI would have been sent too. The other session still wants
    // URI: the backend stays subscribed.
    await until('the first session to end its subscriptions', () => !backend.subscribed.has(MARKER));
    expect(backend.subscribed.has(URI)).toBe(true);

    await second.transport.terminateSession();
    await until('the backend to be unsubscribed after DELETE', () => !backend.subscribed.has(URI));
    await first.client.close();
    await second.client.close();
  });

  it('unsubscribes at the backend when a 2024-11-05 /sse stream closes', async () => {
    const URI = 'test://sub/sse';
    const client = new Client({ name: 'sub-sse', version: '1' });
    await client.connect(new SSEClientTransport(new URL(gw.url.replace(/\/mcp$/, '/sse'))));
    await client.subscribeResource({ uri: URI });
    expect(backend.subscribed.has(URI)).toBe(true);

    await client.close();
    await until('the backend to be unsubscribed after the stream closed', () => !backend.subscribed.has(URI));
  });

  it('unsubscribes at the backend when an idle session is closed', async () => {
    const URI = 'test://sub/idle';
    const short = await startGateway({ mcpServers: { sub: { url: backend.url } }, gateway: { legacySessionIdleMs: 1_000 } });
    try {
      const client = new Client({ name: 'sub-idle', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(short.url)));
      await client.subscribeResource({ uri: URI });
      expect(backend.subscribed.has(URI)).toBe(true);
      // The client goes quiet: its GET stream closed (no DELETE), the session idle from then on. The
      // sweeper runs every half second here: the session is closed within about a second and a half.
      await client.close().catch(() => undefined);
      await until('the backend to be unsubscribed after the idle timeout', () => !backend.subscribed.has(URI));
    } finally {
      await short.close();
    }
  });
});
