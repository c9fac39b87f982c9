/**
 * The official reference servers from npm (`@modelcontextprotocol/server-everything`,
 * `server-filesystem`, `server-memory`; devDependencies, started over stdio exactly as a desktop host
 * starts them) behind the gateway, driven by the SDK v2 client pinned to 2026-07-28 with every input
 * capability. Every tool a server lists for such a client directly is listed through the gateway, and
 * elicitation, sampling, roots, progress and file tools complete.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import type { Client as V2Client } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, firstText, startGateway, type RunningGateway } from '../helpers/gateway.js';

const pkg = (name: string, file: string): string => fileURLToPath(new URL(`../../node_modules/@modelcontextprotocol/${name}/dist/${file}`, import.meta.url));
const EVERYTHING = { command: process.execPath, args: [pkg('server-everything', 'index.js'), 'stdio'] };
const FULL_CAPS = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };
const dir = mkdtempSync(join(tmpdir(), 'ref-servers-'));
const ROOT = { uri: pathToFileURL(dir).href, name: 'work' };

/** A v2 client that answers every kind of input request. */
async function capableClient(url: string): Promise<V2Client> {
  const client = await connectClient(url, FULL_CAPS);
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada', color: 'red', email: 'ada@example.com' } }));
  client.setRequestHandler('sampling/createMessage', async () => ({ role: 'assistant', content: { type: 'text', text: 'sampled text' }, model: 'test-model' }));
  client.setRequestHandler('roots/list', async () => ({ roots: [ROOT] }));
  return client;
}

/** What the server lists for a fully capable legacy client talking to it directly. */
async function directToolNames(server: { command: string; args: string[]; env?: Record<string, string> }): Promise<string[]> {
  const client = new Client({ name: 'direct', version: '1.0.0' }, { capabilities: FULL_CAPS });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [ROOT] }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' }));
  await client.connect(new StdioClientTransport({ ...server, stderr: 'ignore' }));
  try {
    return (await client.listTools()).tools.map((t) => t.name).sort();
  } finally {
    await client.close();
  }
}

const names = async (client: V2Client): Promise<string[]> => (await client.listTools()).tools.map((t) => t.name).sort();

describe('server-everything behind the gateway', () => {
  let gw: RunningGateway;
  let client: V2Client;
  beforeAll(async () => {
    gw = await startGateway({ mcpServers: { everything: EVERYTHING } });
    client = await capableClient(gw.url);
  });
  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('lists every tool the server shows a fully capable client', async () => {
    const direct = await directToolNames(EVERYTHING);
    expect(direct).toEqual(expect.arrayContaining(['trigger-elicitation-request', 'trigger-sampling-request', 'get-roots-list', 'trigger-url-elicitation']));
    expect(await names(client)).toEqual(direct);
  });

  it('completes plain, elicitation, sampling, roots and progress tools', async () => {
    expect(firstText(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }))).toBe('Echo: hi');
    expect(firstText(await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } }))).toMatch(/5/);
    const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    expect(JSON.stringify(elicited.content)).toMatch(/Ada/);
    expect(JSON.stringify((await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello' } })).content)).toMatch(/sampled text/);
    expect(JSON.stringify((await client.callTool({ name: 'get-roots-list', arguments: {} })).content)).toContain(ROOT.uri);
    const progress: number[] = [];
    const long = await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(JSON.stringify(long.content)).toMatch(/completed/i);
    expect(progress).toEqual([1, 2, 3]);
  });
});

describe('server-filesystem behind the gateway', () => {
  const FILESYSTEM = { command: process.execPath, args: [pkg('server-filesystem', 'index.js'), dir] };
  let gw: RunningGateway;
  let client: V2Client;
  beforeAll(async () => {
    gw = await startGateway({ mcpServers: { files: FILESYSTEM } });
    client = await capableClient(gw.url);
  });
  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('lists every tool and writes, reads and lists files inside the client root', async () => {
    expect(await names(client)).toEqual(await directToolNames(FILESYSTEM));
    const file = join(dir, 'note.txt');
    await client.callTool({ name: 'write_file', arguments: { path: file, content: 'hello from the gateway' } });
    expect(readFileSync(file, 'utf8')).toBe('hello from the gateway');
    expect(firstText(await client.callTool({ name: 'read_text_file', arguments: { path: file } }))).toBe('hello from the gateway');
    expect(firstText(await client.callTool({ name: 'list_directory', arguments: { path: dir } }))).toContain('note.txt');
  });
});

describe('server-memory behind the gateway', () => {
  const MEMORY = { command: process.execPath, args: [pkg('server-memory', 'index.js')], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } };
  let gw: RunningGateway;
  let client: V2Client;
  beforeAll(async () => {
    gw = await startGateway({ mcpServers: { memory: MEMORY } });
    client = await capableClient(gw.url);
  });
  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('lists every tool and keeps a knowledge graph', async () => {
    expect(await names(client)).toEqual(await directToolNames(MEMORY));
    await client.callTool({
      name: 'create_entities',
      arguments: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] },
    });
    const graph = await client.callTool({ name: 'read_graph', arguments: {} });
    expect(JSON.stringify(graph)).toContain('wrote the first program');
  });
});
