/**
 * `gateway.policy` on every front, over a real legacy stdio backend: a principal denied a tool does
 * not see it in `tools/list` (2026-07-28), in a legacy session's list (the v1 SDK client) or in the
 * proxy tools' `list_tools`, and gets `forbidden` calling it on `/mcp`, on the legacy route and through
 * `execute_tool`; another principal is untouched; a denied server disappears from `list_servers`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { split } from '../helpers/proxy-tools.js';
import { post } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
let gw: RunningGateway;

beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: stdioFixture(), secret: stdioFixture({ FIXTURE_NAME: 'secret' }) },
    gateway: {
      coalesceMs: 0,
      apiKeys: [
        { principal: 'alice', key: ALICE },
        { principal: 'bob', key: BOB },
      ],
      proxyTools: { enabled: true },
      policy: {
        groups: { contractors: ['bob'] },
        rules: [{ groups: ['contractors'], deny: { tools: ['elicit_*'], servers: ['secret'], resources: ['test://static'] } }],
      },
    },
  });
});
afterAll(async () => gw?.close());

const rpc = (key: string, method: string, params: Record<string, unknown> = {}) =>
  post(gw.url, method, params, { caps: { elicitation: {} }, headers: { authorization: `Bearer ${key}` } });

async function toolNames(key: string): Promise<string[]> {
  const r = await rpc(key, 'tools/list');
  return ((r.message['result'] as { tools: { name: string }[] }).tools ?? []).map((t) => t.name);
}

async function v1Client(key: string): Promise<Client> {
  const client = new Client({ name: 'policy-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

describe('gateway.policy', () => {
  it('on /mcp: what bob may not use is not listed to him and is refused as forbidden; alice is untouched', async () => {
    const bobs = await toolNames(BOB);
    expect(bobs).toContain('legacy__echo');
    expect(bobs.filter((n) => n.startsWith('legacy__elicit_') || n.startsWith('secret__'))).toEqual([]);
    expect(await toolNames(ALICE)).toEqual(expect.arrayContaining(['legacy__elicit_name', 'secret__echo']));
    for (const name of ['legacy__elicit_name', 'secret__echo']) {
      const refused = await rpc(BOB, 'tools/call', { name, arguments: { text: 'x' } });
      expect(refused.message['error']).toMatchObject({ code: -32602, data: { reason: 'forbidden' } });
      expect((refused.message['error'] as { message: string }).message).toMatch(/gateway\.policy/);
    }
    expect((await rpc(ALICE, 'tools/call', { name: 'secret__echo', arguments: { text: 'ok' } })).message['result']).toMatchObject({
      content: [{ text: 'ok' }],
    });
  });

  it('refuses a denied resource in whatever form its URI is written (the backend reads TEST://static as test://static)', async () => {
    for (const uri of ['test://static', 'TEST://static', 'Test://static']) {
      const refused = await post(gw.url, 'resources/read', { uri }, { headers: { authorization: `Bearer ${BOB}` } });
      expect(refused.message['error'], uri).toMatchObject({ code: -32602, data: { reason: 'forbidden' } });
      const served = await post(gw.url, 'resources/read', { uri }, { headers: { authorization: `Bearer ${ALICE}` } });
      expect(JSON.stringify(served.message['result']), uri).toContain('static text');
    }
  });

  it('lists resources by the URI a read is refused by, on /mcp and through list_resources (the resource is named "static")', async () => {
    const uris = async (key: string): Promise<string[]> =>
      ((await rpc(key, 'resources/list')).message['result'] as { resources: { uri: string }[] }).resources.map((r) => r.uri);
    expect(await uris(ALICE)).toContain('test://static');
    expect(await uris(BOB)).not.toContain('test://static');
    expect((await uris(BOB)).length).toBeGreaterThan(0);
    const listed = async (key: string): Promise<string[]> =>
      (split(await rpc(key, 'tools/call', { name: 'list_resources', arguments: {} })).body['resources'] as { uri: string }[]).map((r) => r.uri);
    expect(await listed(ALICE)).toContain('test://static');
    expect(await listed(BOB)).not.toContain('test://static');
  });

  it('refuses a denied resource through read_resource too, in whatever form its URI is written', async () => {
    const read = async (key: string, uri: string) => split(await rpc(key, 'tools/call', { name: 'read_resource', arguments: { server: 'legacy', uri } })).body;
    for (const uri of ['test://static', 'TEST://static']) {
      expect(await read(BOB, uri), uri).toMatchObject({ error: { code: 'TOOL_ERR_NOT_ALLOWED', details: { reason: 'forbidden', server: 'legacy' } } });
      expect(JSON.stringify(await read(ALICE, uri)), uri).toContain('static text');
    }
  });

  it('on the legacy route (the v1 SDK client): the same list and the same refusal', async () => {
    const client = await v1Client(BOB);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('legacy__echo');
      expect(names.filter((n) => n.includes('elicit_') || n.startsWith('secret__'))).toEqual([]);
      await expect(client.callTool({ name: 'legacy__elicit_name', arguments: {} })).rejects.toThrow(/Forbidden: tool "elicit_name" of server "legacy"/);
    } finally {
      await client.close();
    }
  });

  it('through the proxy tools: list_servers, list_tools and execute_tool', async () => {
    const tool = async (key: string, name: string, args: Record<string, unknown>) => split(await rpc(key, 'tools/call', { name, arguments: args }));
    const servers = ((await tool(BOB, 'list_servers', {})).body['servers'] as { name: string }[]).map((s) => s.name);
    expect(servers).toEqual(['legacy']);
    const listed = ((await tool(BOB, 'list_tools', {})).body['tools'] as { server: string; name: string }[]).map((t) => `${t.server}/${t.name}`);
    expect(listed).toContain('legacy/echo');
    expect(listed.filter((n) => n.includes('elicit_') || n.startsWith('secret/'))).toEqual([]);
    expect((await tool(BOB, 'get_server_status', { server: 'secret' })).body).toMatchObject({ error: { code: 'TOOL_ERR_SERVER_NOT_FOUND' } });
    expect((await tool(ALICE, 'get_server_status', { server: 'secret' })).body).toMatchObject({ name: 'secret' });
    const refused = await tool(BOB, 'execute_tool', { server: 'legacy', tool: 'elicit_name', arguments: {} });
    expect(refused.body).toMatchObject({ error: { code: 'TOOL_ERR_NOT_ALLOWED', details: { reason: 'forbidden', server: 'legacy', tool: 'elicit_name' } } });
    const served = await tool(ALICE, 'execute_tool', { server: 'secret', tool: 'echo', arguments: { text: 'alice' } });
    expect(JSON.stringify(served.body)).toContain('alice');
  });
});
