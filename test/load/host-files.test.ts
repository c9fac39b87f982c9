/**
 * The four hosts' own MCP files, written as the hosts write them (their own settings beside the
 * servers, their variables), given to the gateway CLI as they are: each starts the real npm servers it
 * names (devDependencies, run with node as a host runs them: no download), and a real client (SDK v2,
 * 2026-07-28, every input capability, answering each request) is listed every tool and calls each once
 * with valid arguments.
 *
 * - Claude Desktop `claude_desktop_config.json`: `globalShortcut` and `preferences` beside `mcpServers`;
 *   server-everything, every tool of which is called (elicitation, URL elicitation, sampling, roots,
 *   progress, and the task-required research tool answered as a plain call).
 * - Claude Code `.mcp.json`: `"type": "stdio"`, `${MEMORY_PATH:-${HOME}/…}` (unset: the default).
 * - VS Code `.vscode/mcp.json`: `servers`, `inputs`, `${workspaceFolder}` (the project, not `.vscode`).
 * - Cursor `.cursor/mcp.json`: the package's bin as the command, `${workspaceFolder}` (the project, not
 *   `.cursor`), `${env:…}`, `${userHome}`, two servers (so names are prefixed).
 *
 * In test/load (`npm run test:load`, run by CI after `npm test`): four CLI processes under tsx and six
 * server processes take about 40 CPU-seconds, over the share `npm test` has on 2 cores.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeArgs } from '../helpers/built.js';
import { connectClient, wireViolations } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const MODULES = fileURLToPath(new URL('../../node_modules/', import.meta.url));
const server = (name: string): string => join(MODULES, '@modelcontextprotocol', name, 'dist', 'index.js');
const STARTUP_MS = 60_000;
/** A 1×1 PNG, for read_media_file. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const home = mkdtempSync(join(tmpdir(), 'host-home-'));

interface RunningCli {
  readonly url: string;
  readonly stderr: () => string;
  stop(): Promise<void>;
}

/** The gateway CLI as a user runs it on a host's file (`--config <file> --port 0`), ready once every backend is up. */
async function startCli(file: string, env: Record<string, string> = {}): Promise<RunningCli> {
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs(MAIN), '--config', file, '--port', '0'], {
    // `node` on PATH as the hosts find it; HOME is this test's (`${userHome}`, `${HOME}`).
    env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}`, HOME: home, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  /** Waits for `done` (or the gateway's exit); stops the gateway and says what did not happen otherwise. */
  const upTo = async (done: () => boolean | Promise<boolean>, what: string): Promise<void> => {
    let ok = false;
    await until(what, async () => child.exitCode !== null || (ok = await done()), STARTUP_MS).catch(() => undefined);
    if (!ok) {
      await stop();
      throw new Error(`${what} within ${STARTUP_MS} ms; stderr:\n${stderr.slice(-3000)}`);
    }
  };
  let url = '';
  await upTo(() => (url = /"url":"(http:[^"]+)"/.exec(stderr)?.[1] ?? '') !== '', 'the gateway did not listen');
  // Ready once every backend it names is up (started through the expanded command line).
  await upTo(
    () =>
      fetch(new URL('/readyz', url)).then(
        (r) => r.ok,
        () => false,
      ),
    'the backends were not all up',
  );
  return { url, stderr: () => stderr, stop };
}

/** An SDK v2 client (2026-07-28) that declares and answers every kind of input request. */
async function hostClient(url: string, root: string): Promise<{ client: Client; asked: string[] }> {
  const client = await connectClient(url, { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} });
  const asked: string[] = [];
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.push(`elicitation/${req.params.mode ?? 'form'}`);
    return req.params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { name: 'Ada', color: 'red', email: 'ada@example.com' } };
  });
  client.setRequestHandler('sampling/createMessage', async () => {
    asked.push('sampling');
    return { role: 'assistant', content: { type: 'text', text: 'sampled text' }, model: 'test-model' };
  });
  client.setRequestHandler('roots/list', async () => {
    asked.push('roots');
    return { roots: [{ uri: pathToFileURL(root).href, name: 'project' }] };
  });
  return { client, asked };
}

type Calls = Record<string, Record<string, unknown>>;

/**
 * Lists the tools, checks they are exactly `calls`' (every tool listed has a call, every call a tool),
 * and calls each in order, expecting no tool error. The long ones (`slow`) run beside the others.
 */
async function listAndCallEvery(client: Client, calls: Calls, slow: readonly string[] = []): Promise<Record<string, string>> {
  const listed = (await client.listTools()).tools.map((t) => t.name).sort();
  expect(listed).toEqual(Object.keys(calls).sort());
  const texts: Record<string, string> = {};
  const call = async (name: string): Promise<void> => {
    const r = await client.callTool({ name, arguments: calls[name]! });
    expect(r.isError, `${name}: ${JSON.stringify(r.content).slice(0, 500)}`).not.toBe(true);
    texts[name] = JSON.stringify(r.content);
  };
  const beside = Promise.all(slow.map(call));
  for (const name of Object.keys(calls)) if (!slow.includes(name)) await call(name);
  await beside;
  return texts;
}

/** Every tool of server-everything (a client with every input capability, no task support), with valid arguments. */
function everythingCalls(prefix = ''): Calls {
  const calls: Calls = {
    echo: { message: 'hi' },
    'get-annotated-message': { messageType: 'success', includeImage: true },
    'get-env': {},
    'get-resource-links': { count: 2 },
    'get-resource-reference': { resourceType: 'Text', resourceId: 1 },
    'get-structured-content': { location: 'Chicago' },
    'get-sum': { a: 2, b: 3 },
    'get-tiny-image': {},
    'gzip-file-as-resource': { name: 'hello.txt.gz', data: `data:text/plain;base64,${Buffer.from('hello').toString('base64')}`, outputType: 'resource' },
    'toggle-simulated-logging': {},
    'toggle-subscriber-updates': {},
    'trigger-long-running-operation': { duration: 1, steps: 2 },
    'get-roots-list': {},
    'trigger-elicitation-request': {},
    'trigger-url-elicitation': { url: 'https://example.com/consent' },
    'trigger-sampling-request': { prompt: 'Say hi', maxTokens: 10 },
    'simulate-research-query': { topic: 'gateways' },
  };
  return Object.fromEntries(Object.entries(calls).map(([k, v]) => [`${prefix}${k}`, v]));
}

/** Every tool of server-memory, in an order that leaves each one something to work on. */
function memoryCalls(prefix = ''): Calls {
  const calls: Calls = {
    create_entities: {
      entities: [
        { name: 'Ada', entityType: 'person', observations: ['wrote the first program'] },
        { name: 'Engine', entityType: 'machine', observations: [] },
      ],
    },
    create_relations: { relations: [{ from: 'Ada', to: 'Engine', relationType: 'programmed' }] },
    add_observations: { observations: [{ entityName: 'Ada', contents: ['born 1815'] }] },
    read_graph: {},
    search_nodes: { query: 'Ada' },
    open_nodes: { names: ['Ada'] },
    delete_observations: { deletions: [{ entityName: 'Ada', observations: ['born 1815'] }] },
    delete_relations: { relations: [{ from: 'Ada', to: 'Engine', relationType: 'programmed' }] },
    delete_entities: { entityNames: ['Engine'] },
  };
  return Object.fromEntries(Object.entries(calls).map(([k, v]) => [`${prefix}${k}`, v]));
}

/** Every tool of server-filesystem inside `root` (an image is written there first), in an order that works. */
function filesystemCalls(root: string, prefix = ''): Calls {
  writeFileSync(join(root, 'pixel.png'), Buffer.from(PNG, 'base64'));
  const dir = join(root, 'notes');
  const file = join(dir, 'a.txt');
  const calls: Calls = {
    list_allowed_directories: {},
    create_directory: { path: dir },
    write_file: { path: file, content: 'hello\nworld\n' },
    edit_file: { path: file, edits: [{ oldText: 'world', newText: 'gateway' }] },
    read_text_file: { path: file },
    read_file: { path: file, head: 1 },
    read_multiple_files: { paths: [file] },
    read_media_file: { path: join(root, 'pixel.png') },
    get_file_info: { path: file },
    list_directory: { path: dir },
    list_directory_with_sizes: { path: dir, sortBy: 'size' },
    directory_tree: { path: dir },
    search_files: { path: root, pattern: '**/*.txt' },
    move_file: { source: file, destination: join(dir, 'b.txt') },
  };
  return Object.fromEntries(Object.entries(calls).map(([k, v]) => [`${prefix}${k}`, v]));
}

/** One host's file, written as the host writes it; `root` is the folder its client offers as a root. */
interface HostFile {
  readonly file: string;
  readonly root: string;
  readonly env?: Record<string, string>;
}

function claudeDesktop(): HostFile {
  const folder = join(home, 'Library', 'Application Support', 'Claude');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, 'claude_desktop_config.json');
  const config = {
    globalShortcut: 'Ctrl+Space',
    preferences: { menuBarEnabled: true },
    mcpServers: { everything: { command: 'node', args: [server('server-everything'), 'stdio'] } },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { file, root: home };
}

function claudeCode(): HostFile {
  const project = mkdtempSync(join(tmpdir(), 'claude-code-'));
  const file = join(project, '.mcp.json');
  const memory = {
    type: 'stdio',
    command: 'node',
    args: [server('server-memory')],
    env: { MEMORY_FILE_PATH: '${MEMORY_PATH:-${HOME}/claude-code-memory.jsonl}' },
  };
  writeFileSync(file, JSON.stringify({ mcpServers: { memory } }, null, 2));
  // Set but empty: the default is taken, with ${HOME} expanded in it.
  return { file, root: project, env: { MEMORY_PATH: '' } };
}

function vsCode(): HostFile {
  const workspace = mkdtempSync(join(tmpdir(), 'vscode-ws-'));
  mkdirSync(join(workspace, '.vscode'));
  const file = join(workspace, '.vscode', 'mcp.json');
  const config = {
    inputs: [{ type: 'promptString', id: 'github-token', description: 'GitHub token', password: true }],
    servers: { files: { type: 'stdio', command: 'node', args: [server('server-filesystem'), '${workspaceFolder}'] } },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { file, root: workspace };
}

function cursor(): HostFile {
  const project = mkdtempSync(join(tmpdir(), 'cursor-'));
  mkdirSync(join(project, '.cursor'));
  const file = join(project, '.cursor', 'mcp.json');
  const config = {
    mcpServers: {
      memory: { command: join(MODULES, '.bin', 'mcp-server-memory'), env: { MEMORY_FILE_PATH: '${workspaceFolder}/.cursor-memory.jsonl' } },
      files: { command: 'node', args: [server('server-filesystem'), '${workspaceFolder}', '${userHome}'], env: { NOTE: '${env:CURSOR_NOTE}' } },
    },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { file, root: project, env: { CURSOR_NOTE: 'from the environment' } };
}

const HOSTS = { claudeDesktop: claudeDesktop(), claudeCode: claudeCode(), vsCode: vsCode(), cursor: cursor() };
type Host = keyof typeof HOSTS;
/**
 * The four gateways start one after another, each while the test before it runs (start-up is most of
 * this file's time, and CPU-bound: starting all four at once only slows each); each test takes its own.
 */
const started = new Map<Host, Promise<RunningCli>>();
beforeAll(() => {
  let previous: Promise<unknown> = Promise.resolve();
  for (const [name, host] of Object.entries(HOSTS) as [Host, HostFile][]) {
    const cli = previous.then(
      () => startCli(host.file, host.env),
      () => startCli(host.file, host.env),
    );
    cli.catch(() => undefined); // reported by the test that takes it
    started.set(name, cli);
    previous = cli;
  }
});
afterAll(async () => {
  await Promise.all(
    [...started.values()].map((p) =>
      p.then(
        (cli) => cli.stop(),
        () => undefined,
      ),
    ),
  );
  expect(wireViolations).toEqual([]);
});

/** Runs `body` with the gateway started on `host`'s file and a host client on it; stops both. */
async function withHost(host: Host, body: (c: Client, cli: RunningCli, asked: string[]) => Promise<void>): Promise<void> {
  const cli = await started.get(host)!;
  const { client, asked } = await hostClient(cli.url, HOSTS[host].root);
  try {
    await body(client, cli, asked);
  } finally {
    await client.close();
    await cli.stop();
  }
}

describe("the hosts' own files, as they write them", () => {
  it('Claude Desktop: claude_desktop_config.json with its own settings starts server-everything, and every tool lists and calls', async () => {
    await withHost('claudeDesktop', async (client, cli, asked) => {
      expect(cli.stderr()).toMatch(/ignored top-level keys \(the host's own settings\): globalShortcut, preferences/);
      const texts = await listAndCallEvery(client, everythingCalls(), ['simulate-research-query']);
      expect(texts['get-sum']).toContain('The sum of 2 and 3 is 5');
      expect(texts['get-roots-list']).toContain(pathToFileURL(home).href);
      expect(texts['simulate-research-query']).toContain('Research Report: gateways');
      expect(asked).toEqual(expect.arrayContaining(['elicitation/form', 'elicitation/url', 'sampling', 'roots']));
    });
  });

  it('Claude Code: .mcp.json with ${MEMORY_PATH:-…} starts server-memory on the default path, and every tool lists and calls', async () => {
    await withHost('claudeCode', async (client) => {
      const texts = await listAndCallEvery(client, memoryCalls());
      expect(texts['open_nodes']).toContain('wrote the first program');
    });
    expect(readFileSync(join(home, 'claude-code-memory.jsonl'), 'utf8')).toContain('"name":"Ada"');
  });

  it('VS Code: .vscode/mcp.json with servers, inputs and ${workspaceFolder} starts server-filesystem on the workspace, and every tool lists and calls', async () => {
    const workspace = HOSTS.vsCode.root;
    await withHost('vsCode', async (client, cli) => {
      expect(cli.stderr()).toMatch(/inputs\\+" \(host prompts for secrets\) is ignored/);
      const texts = await listAndCallEvery(client, filesystemCalls(workspace));
      expect(texts['list_allowed_directories']).toContain(workspace);
    });
    expect(readFileSync(join(workspace, 'notes', 'b.txt'), 'utf8')).toBe('hello\ngateway\n');
  });

  it('Cursor: .cursor/mcp.json with a bin command, ${workspaceFolder}, ${env:…} and ${userHome} starts two servers, and every tool lists and calls', async () => {
    const project = HOSTS.cursor.root;
    await withHost('cursor', async (client) => {
      const texts = await listAndCallEvery(client, { ...memoryCalls('memory__'), ...filesystemCalls(project, 'files__') });
      expect(texts['memory__read_graph']).toContain('Ada');
    });
    // ${workspaceFolder} is the project, not its .cursor folder.
    expect(existsSync(join(project, '.cursor-memory.jsonl'))).toBe(true);
  });
});
