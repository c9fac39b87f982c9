/**
 * The legacy client route, first step: the SDK v1 client (2025-11-25, streamable HTTP sessions) on the
 * same path as the 2026-07-28 endpoint. A legacy backend's mid-call requests reach it as real
 * server→client requests on the call's stream (the SDK server's legacy shim over the same dispatcher),
 * and sessions are per principal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { post } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared' } },
    gateway: {
      coalesceMs: 0,
      apiKeys: [
        { principal: 'alice', key: ALICE },
        { principal: 'bob', key: BOB },
      ],
    },
  });
});
afterAll(async () => gw?.close());

async function v1Client(key = ALICE): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => ({
    action: 'accept',
    content: { name: `v1-${String(req.params.message).length}`, color: 'blue' },
  }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    content: { type: 'text', text: 'Paris' },
    model: 'm',
    stopReason: 'endTurn',
  }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///v1-root', name: 'root' }] }));
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  return { client, transport };
}
const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

describe('legacy client route (2025-11-25 sessions on /mcp)', () => {
  it('opens a session with initialize and serves lists and plain calls', async () => {
    const { client, transport } = await v1Client();
    expect(transport.sessionId).toBeTruthy();
    expect(client.getServerVersion()?.name).toBe('mcp-mrtr-gateway');
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('echo');
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');
    await client.close();
  });

  it('forwards elicitation, sampling and roots natively during a call, over one and two rounds', async () => {
    const { client } = await v1Client();
    expect(text(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, v1-18!');
    expect(text(await client.callTool({ name: 'elicit_two', arguments: {} }))).toBe('v1-13 likes blue');
    expect(text(await client.callTool({ name: 'sample', arguments: { prompt: 'Capital?' } }))).toContain('Paris');
    expect(text(await client.callTool({ name: 'roots', arguments: {} }))).toContain('file:///v1-root');
    await client.close();
  });

  it('relays log lines after logging/setLevel', async () => {
    const { client } = await v1Client();
    const lines: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void lines.push(n.params.data));
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'logs', arguments: {} });
    expect(lines.length).toBeGreaterThan(0);
    await client.close();
  });

  it("keeps sessions per principal: another principal's session id is not found; DELETE ends a session", async () => {
    const { client, transport } = await v1Client();
    const sid = transport.sessionId!;
    const foreign = await fetch(gw.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
        authorization: `Bearer ${BOB}`,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
    });
    expect(foreign.status).toBe(404);
    await transport.terminateSession();
    const after = await fetch(gw.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
        authorization: `Bearer ${ALICE}`,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/list', params: {} }),
    });
    expect(after.status).toBe(404);
    await client.close();
  });

  it('leaves 2026-07-28 clients on the stateless front, and GET without a session is still 405', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(r.message['result']).toMatchObject({ resultType: 'complete' });
    const get = await fetch(gw.url, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(get.status).toBe(405);
    const noSession = await fetch(gw.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${ALICE}`,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'tools/list', params: {} }),
    });
    expect(noSession.status).toBe(400); // no _meta and no session: still the 2026 front's -32022 or a 400
  });
});
