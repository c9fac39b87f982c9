/**
 * A resource URI that is not an absolute URI (RFC 3986: no scheme, or control characters) is the
 * client's mistake: -32602 with a message that says what is wrong, on every route — the 2026-07-28
 * endpoint and a legacy session's `resources/read`, `resources/subscribe` and `resources/unsubscribe` —
 * never a backend's -32603 "Invalid URL", and never a success. Real HTTP, real backends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { post } from '../helpers/wire.js';

let gw: RunningGateway;
let everything: { url: string; close(): Promise<void> };
beforeAll(async () => {
  // The "everything" backend offers resources/subscribe (the legacy route relays it then).
  const { startLegacyEverything } = await import('../../spec/fixtures/legacy-everything/http.js');
  everything = await startLegacyEverything();
  gw = await startGateway({
    mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared' }, everything: { url: everything.url } },
    gateway: { coalesceMs: 0 },
  });
});
afterAll(async () => {
  await gw?.close();
  await everything?.close();
});

/** `Mcp-Name` as SEP-2243 carries a value that is not visible ASCII. */
const nameHeader = (value: string) => `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;

const BAD: readonly { uri: string; problem: RegExp }[] = [
  { uri: 'x', problem: /absolute URI with a scheme/ },
  { uri: 'notes/today.txt', problem: /absolute URI with a scheme/ },
  { uri: '://no-scheme', problem: /absolute URI with a scheme/ },
  { uri: '\u0000', problem: /control characters/ },
  { uri: 'test://static\u0000', problem: /control characters/ },
  { uri: 'test://item/1\n2', problem: /control characters/ },
];

describe('resource URIs on the 2026-07-28 endpoint', () => {
  it('answers -32602 naming the problem for a uri without a scheme or with control characters', async () => {
    for (const { uri, problem } of BAD) {
      const r = await post(gw.url, 'resources/read', { uri }, { headers: { 'mcp-name': nameHeader(uri) } });
      expect(r.status, JSON.stringify(uri)).toBe(200);
      const error = r.message['error'] as { code: number; message: string; data?: { uri?: string } };
      expect(error, JSON.stringify(uri)).toMatchObject({ code: -32602, message: expect.stringMatching(problem) });
      expect(error.data?.uri).toBe(uri);
    }
  });

  it('still reads a good uri, fixed or from a template', async () => {
    for (const uri of ['test://static', 'test://item/42']) {
      const r = await post(gw.url, 'resources/read', { uri });
      expect(r.message['result'], JSON.stringify(r.message)).toMatchObject({ contents: [{ uri }] });
    }
  });
});

describe('resource URIs on the legacy route', () => {
  let client: Client;
  beforeAll(async () => {
    client = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  });
  afterAll(async () => client?.close());

  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e,
    );

  it('answers -32602 to resources/read, resources/subscribe and resources/unsubscribe with a bad uri', async () => {
    expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true);
    for (const { uri, problem } of BAD) {
      for (const attempt of [client.readResource({ uri }), client.subscribeResource({ uri }), client.unsubscribeResource({ uri })]) {
        const e = await failure(attempt);
        expect(e, JSON.stringify(uri)).toBeInstanceOf(McpError);
        expect((e as McpError).code, JSON.stringify(uri)).toBe(-32602);
        expect((e as McpError).message).toMatch(problem);
      }
    }
    expect(await client.readResource({ uri: 'test://static' })).toMatchObject({ contents: [{ uri: 'test://static' }] });
  });
});
