/**
 * The proxy tools about servers, as seed 001 shapes them: `list_servers` entries with where each
 * server is (url, or command; never an env or header value), `connected`, `connectedAt`, `lastError`;
 * `add_server` answering the new server's capabilities and tools; `get_server_status`; and
 * `server_added` reaching a principal whose proxy state did not exist yet when the server was added.
 * Real gateway, real backends (the legacy fixture over stdio and as an HTTP process), real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { startHttpBackendProcess } from '../helpers/processes.js';
import { eventOf, proxyCaller, type ToolCaller } from '../helpers/proxy-tools.js';

const KEYS = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdefgh',
  carol: 'carol-key-0123456789abcdef',
  dave: 'dave-key-0123456789abcdefg',
  erin: 'erin-key-0123456789abcdefg',
};
const SECRETS = ['env-secret-1', 'arg-secret-2', 'arg-secret-3', 'query-secret-4', 'header-secret-5'];

let backend: Awaited<ReturnType<typeof startHttpBackendProcess>>;
let extra: Awaited<ReturnType<typeof startHttpBackendProcess>>;
let gw: RunningGateway;
const as = (who: keyof typeof KEYS): ToolCaller => proxyCaller(gw.url, KEYS[who]);

beforeAll(async () => {
  [backend, extra] = await Promise.all([startHttpBackendProcess(), startHttpBackendProcess()]);
  const fixture = stdioFixture({ FIXTURE_SECRET: SECRETS[0]! }) as { args: string[] };
  gw = await startGateway({
    mcpServers: {
      local: { ...fixture, args: [...fixture.args, '--api-key', SECRETS[1]!, `--token=${SECRETS[2]}`, 'plain'] },
      web: { url: `${backend.url}?token=${SECRETS[3]}`, headers: { authorization: `Bearer ${SECRETS[4]}` } },
      missing: { command: 'no-such-mcp-server-command' },
    },
    gateway: {
      apiKeys: Object.entries(KEYS).map(([principal, key]) => ({ principal, key })),
      proxyTools: { enabled: true, addServer: { urls: [extra.url, 'http://127.0.0.1:9/*'] } },
    },
  });
});
afterAll(async () => {
  await gw?.close();
  backend?.child.kill('SIGKILL');
  extra?.child.kill('SIGKILL');
});

describe('list_servers', () => {
  it('says where each server is, whether it is connected and since when, and its last error, without a secret', async () => {
    const r = await as('alice')('list_servers');
    const text = JSON.stringify(r.body);
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    const byName = Object.fromEntries((r.body['servers'] as Record<string, unknown>[]).map((s) => [s['name'], s]));
    expect(byName['local']).toEqual({
      name: 'local',
      source: 'config',
      command: process.execPath,
      args: [...(stdioFixture() as { args: string[] }).args, '--api-key', '…', '--token=…', 'plain'],
      status: 'up',
      connected: true,
      connectedAt: expect.any(String),
    });
    expect(Date.parse(byName['local']!['connectedAt'] as string)).toBeLessThanOrEqual(Date.now());
    expect(byName['web']).toMatchObject({ url: `${backend.url}?token=…`, transport: 'streamable-http', connected: true, connectedAt: expect.any(String) });
    expect(byName['missing']).toMatchObject({ command: 'no-such-mcp-server-command', args: [], connected: false, lastError: expect.stringMatching(/ENOENT/) });
    expect(byName['missing']).not.toHaveProperty('connectedAt');
  });
});

describe('get_server_status', () => {
  it("shows one server's connection, capabilities, and this scope's working tasks and pending requests on it (not another's)", async () => {
    const bob = as('bob');
    const started = await bob('execute_tool', { server: 'local', tool: 'elicit_name' });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    const status = await bob('get_server_status', { server: 'local' });
    expect(status.body).toMatchObject({
      name: 'local',
      connected: true,
      capabilities: { tools: {} },
      working_tasks: [{ taskId, toolName: 'elicit_name', status: 'input_required' }],
      pending_client: { elicitations: [expect.objectContaining({ server: 'local', taskId, message: 'What is your name?' })], sampling_requests: [] },
    });
    expect((await bob('get_server_status', { server: 'web' })).body).toMatchObject({ working_tasks: [], pending_client: { elicitations: [] } });
    expect((await as('alice')('get_server_status', { server: 'local' })).body).toMatchObject({ working_tasks: [], pending_client: { elicitations: [] } });
    expect((await bob('get_server_status', { server: 'nope' })).body).toMatchObject({ error: { code: 'TOOL_ERR_SERVER_NOT_FOUND' } });
    await bob('cancel_task', { taskId });
  });
});

describe('add_server', () => {
  it('answers the new server with its capabilities and tools, and announces it to principals whose state is made later', async () => {
    const alice = as('alice');
    await alice('list_servers'); // Alice's state exists; Carol's does not yet
    const added = await alice('add_server', { name: 'extra', url: extra.url });
    expect(added.body).toMatchObject({ added: 'extra', name: 'extra', source: 'added', url: extra.url, connected: true, capabilities: { tools: {} } });
    const tools = added.body['tools'] as { name: string; description?: string; inputSchema: unknown }[];
    expect(tools).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'echo', description: 'Echo', inputSchema: expect.any(Object) })]));
    await eventOf(alice, 'server_added', (e) => e.server === 'extra');

    // Carol's first call: her state is made now, and starts with the servers added before it.
    const carol = as('carol');
    const first = await carol('list_servers');
    expect(first.events?.map((e) => [e.type, e.server])).toEqual([['server_added', 'extra']]);
    expect(first.events?.[0]?.data).toEqual({ name: 'extra', url: extra.url, transport: 'streamable-http', addedBeforeScope: true });
    expect((await carol('await_activity', { timeout_ms: 0 })).body['events']).toEqual([]); // once
    // A workspace made later starts the same way; Alice's own events stay hers.
    const ws = (await carol('new_workspace')).body['workspace'] as string;
    const inWs = await carol('await_activity', { timeout_ms: 0, workspace: ws });
    expect(inWs.body['events']).toEqual([{ server: 'extra', events: [expect.objectContaining({ type: 'server_added' })] }]);

    expect((await alice('remove_server', { name: 'extra' })).body).toEqual({ removed: 'extra' });
    await eventOf(carol, 'server_removed', (e) => e.server === 'extra');
    // Dave comes after the removal: nothing to tell him of.
    const dave = await as('dave')('list_servers');
    expect(dave.events).toBeUndefined();
  });

  it('answers a server that cannot be reached yet without capabilities or tools, and says so', async () => {
    const erin = as('erin');
    const r = await erin('add_server', { name: 'unreachable', url: 'http://127.0.0.1:9/mcp' }); // nothing listens on port 9
    expect(r.body).toMatchObject({ added: 'unreachable', connected: false, lastError: expect.any(String), note: expect.stringContaining('Not connected yet') });
    expect(r.body).not.toHaveProperty('tools');
    expect(r.body).not.toHaveProperty('capabilities');
    expect((await erin('remove_server', { name: 'unreachable' })).body).toEqual({ removed: 'unreachable' });
  });

  it('refuses a URL with credentials as such, and never echoes its password', async () => {
    for (const url of ['http://user:hunter2@127.0.0.1:9/mcp', 'http:user:hunter2@127.0.0.1:9/mcp', ' http:\\\\user:hunter2@127.0.0.1:9/mcp']) {
      const r = await as('erin')('add_server', { name: 'creds', url });
      expect(r.body, url).toMatchObject({ error: { code: 'TOOL_ERR_NOT_ALLOWED', message: expect.stringContaining('URLs with credentials are refused') } });
      expect(JSON.stringify(r.body), url).not.toContain('hunter2');
    }
  });
});
