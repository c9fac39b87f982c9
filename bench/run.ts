/**
 * `npm run bench [-- --quick] [-- --out file.json] [-- --only pass-through,profile,mrtr,cluster,seal,memory,observe] [-- --systems direct,gateway,...] [-- --gateway-dist dir]`: what the gateway costs per call and how it holds
 * up when many calls wait, measured in one run on this machine against a direct call (the limit).
 * Everything talks to 127.0.0.1 only. Prints a markdown table and writes the same figures as JSON.
 *
 * Systems (each run as its own process, measured alternately, `repeats` times; medians with spread):
 *   direct       the official v1 client talks to the backend over stdio (what a desktop host does)
 *   gateway      a 2026-07-28 client through the gateway (raw HTTP with keep-alive), default config
 *   gateway-best the same with the tuning the README documents (long list cache, warn-level logs)
 *   gateway-sdk  the SDK v2 client through the gateway (default config)
 *   http-floor   a bare node:http server forwarding to the backend over stdio (bench/floor.ts): what one
 *                HTTP hop costs here, with no MCP transport, checks or state
 * Also: one MRTR round against the same elicitation answered in-session directly; requestState
 * seal + open; RSS with many parked calls; the gateway's CPU time per 1k pass-through calls, and what
 * metrics and tracing add to it (bench/observe.ts).
 *   mcp-proxy    npm mcp-proxy 6.x (`--server stream`) with the official v1 client
 *   supergateway npm supergateway 4.x (stdio → streamable HTTP, `--stateful`) with the official v1 client
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client as V2Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createRequestStateCodec, randomStateKey } from '../src/protocol/request-state.js';
import { cpuTimeMs, rssBytes, runLoad, spread, type LoadResult, type Spread } from './measure.js';
import { observeOverhead, type ObserveFigures } from './observe.js';
import { profileMarkdown, summariseProfile, type ProfileSummary } from './profile.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BACKEND = join(ROOT, 'bench', 'backend.ts');
const FLOOR = join(ROOT, 'bench', 'floor.ts');
const quick = process.argv.includes('--quick');
const outArg = process.argv.indexOf('--out');
const OUT = outArg > 0 ? process.argv[outArg + 1]! : join(ROOT, 'bench', 'results', `bench-${quick ? 'quick' : 'full'}.json`);
const REPEATS = quick ? 1 : 3;
/** `--only a,b` runs some phases (while working on one figure); the default is all of them. */
const onlyArg = process.argv.indexOf('--only');
const ONLY = onlyArg > 0 ? new Set(process.argv[onlyArg + 1]!.split(',')) : undefined;
/** `--gateway-dist dir` measures another build of the gateway (a before/after comparison on one machine). */
const distArg = process.argv.indexOf('--gateway-dist');
const GATEWAY_DIST = distArg > 0 ? process.argv[distArg + 1]! : join(ROOT, 'dist');
/** `--systems a,b` measures some systems only (same purpose). */
const systemsArg = process.argv.indexOf('--systems');
const SYSTEMS = systemsArg > 0 ? new Set(process.argv[systemsArg + 1]!.split(',')) : undefined;
const phase = (name: 'pass-through' | 'profile' | 'mrtr' | 'cluster' | 'seal' | 'memory' | 'observe'): boolean => !ONLY || ONLY.has(name);
/** The Redis the cluster figure uses (`.ci/run` provides one). */
const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const CALLS: Record<number, number> = quick ? { 1: 100, 16: 300, 64: 600 } : { 1: 1_000, 16: 4_000, 64: 8_000 };
const WARMUP = quick ? 20 : 200;
const PARKED = quick ? [200, 1_000] : [1_000, 10_000];
const PAYLOADS = { '16 B': 'x'.repeat(16), '64 KiB': 'x'.repeat(64 * 1024) };
/** Per-request `_meta`: a plain client declares no input capability; `ask` is called by one that can be asked. */
const metaFor = (caps: Record<string, unknown>) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': caps,
});
const ELICIT = { elicitation: {} };
const NODE_TSX = [process.execPath, '--import', 'tsx'];

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

interface GatewayProcess {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

interface ProbedGateway extends GatewayProcess {
  /** RSS and heap of the gateway after a full GC (bench/probe.ts answers over IPC). */
  memory(): Promise<NodeJS.MemoryUsage>;
  /** Starts the gateway's CPU profiler; `profileStop` writes the profile to `file`. */
  profileStart(): Promise<void>;
  profileStop(file: string): Promise<void>;
  heapSnapshot(file: string): Promise<void>;
}

/**
 * Starts the gateway as its own process (built dist/ when present) and waits until it is ready.
 * `nodeFlags` go to Node (a CPU profile, say); the bench's probe is preloaded so memory can be asked for.
 */
async function startGateway(file: Record<string, unknown>, env: Record<string, string> = {}, nodeFlags: string[] = [], port?: number): Promise<ProbedGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gw-'));
  const config = join(dir, 'gateway.json');
  writeFileSync(config, JSON.stringify(file));
  port ??= await freePort();
  const dist = join(GATEWAY_DIST, 'main.js');
  const probe = ['--expose-gc', '--import', join(ROOT, 'bench', 'probe.mjs')];
  const argv = existsSync(dist) ? [process.execPath, ...probe, dist] : [process.execPath, ...probe, '--import', 'tsx', join(ROOT, 'src', 'main.ts')];
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
  const child = spawn(argv[0]!, [...nodeFlags, ...argv.slice(1), '--config', config, '--port', String(port)], {
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    env: { ...process.env, MCP_GATEWAY_STATE_KEYS: key, ...env },
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`${base}/readyz`).then(
      async (r) => r.ok && ((await r.json()) as { status: string }).status === 'ready',
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error('gateway did not become ready');
    await new Promise((r) => setTimeout(r, 100));
  }
  const ask = (message: string): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`the gateway's probe did not answer ${message}`)), 30_000);
      child.once('message', (m) => {
        clearTimeout(t);
        const reply = m as { ok: boolean; error?: string };
        if (reply.ok) resolve(reply as Record<string, unknown>);
        else reject(new Error(`probe: ${reply.error}`));
      });
      child.send(message);
    });
  return {
    url: `${base}/mcp`,
    pid: child.pid!,
    stop: () => stopChild(child),
    memory: async () => (await ask('memory'))['memory'] as NodeJS.MemoryUsage,
    profileStart: async () => void (await ask('profile-start')),
    profileStop: async (file) => void (await ask(`profile-stop:${file}`)),
    heapSnapshot: async (file) => void (await ask(`heap-snapshot:${file}`)),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

type Peer = 'mcp-proxy' | 'supergateway';

/** Starts a peer gateway with its own CLI, configured as its README says, in front of the same stdio backend. */
async function startPeer(kind: Peer): Promise<GatewayProcess> {
  const port = await freePort();
  const backend = `${NODE_TSX.join(' ')} ${BACKEND}`;
  const argv =
    kind === 'mcp-proxy'
      ? [
          join(ROOT, 'node_modules', 'mcp-proxy', 'dist', 'bin', 'mcp-proxy.mjs'),
          '--host',
          '127.0.0.1',
          '--port',
          String(port),
          '--server',
          'stream',
          '--',
          ...NODE_TSX,
          BACKEND,
        ]
      : [
          join(ROOT, 'node_modules', 'supergateway', 'dist', 'index.js'),
          '--stdio',
          backend,
          '--outputTransport',
          'streamableHttp',
          '--stateful',
          '--port',
          String(port),
          '--logLevel',
          'none',
        ];
  const child = spawn(process.execPath, argv, { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = await peerClient(url).catch(() => undefined);
    if (client) {
      await client.close();
      break;
    }
    if (Date.now() > deadline) throw new Error(`${kind} did not come up`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}

/** The official v1 client over streamable HTTP (what a peer gateway serves), able to answer an elicitation. */
async function peerClient(url: string): Promise<Client> {
  const client = new Client({ name: 'bench-peer', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
  await client.connect(new V1StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const backendEntry = (extra: Record<string, unknown> = {}) => ({ command: NODE_TSX[0], args: [...NODE_TSX.slice(1), BACKEND], ...extra });
const DEFAULT_CONFIG = { mcpServers: { bench: backendEntry() } };
/** The tuning README documents: long list cache, no coalescing window, sessions shared across principals, warn-level logs. */
const BEST_CONFIG = { mcpServers: { bench: backendEntry({ isolation: 'shared' }) }, gateway: { cacheTtlMs: 3_600_000, coalesceMs: 0 } };

let nextId = 1;
async function rpc(url: string, method: string, params: Record<string, unknown>, caps: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const name = (params['name'] as string | undefined) ?? undefined;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: metaFor(caps) } }),
  });
  const body = (await res.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (!body.result) throw new Error(`rpc failed: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function directClient(): Promise<Client> {
  const client = new Client({ name: 'bench-direct', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
  const transport = new StdioClientTransport({ command: NODE_TSX[0]!, args: [...NODE_TSX.slice(1), BACKEND], stderr: 'ignore' });
  await client.connect(transport);
  // Many concurrent writes each wait for `drain` on the pipe: expected, not a leak (as in the gateway).
  (transport as unknown as { _process?: { stdin?: { setMaxListeners(n: number): void } } })._process?.stdin?.setMaxListeners(0);
  return client;
}

async function sdkClient(url: string): Promise<V2Client> {
  const client = new V2Client({ name: 'bench-sdk', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

type Row = { system: string; scenario: string; concurrency: number; p50: Spread; p99: Spread; rps: Spread; errors: number };
const rows: Row[] = [];

function record(system: string, scenario: string, concurrency: number, runs: LoadResult[]): void {
  rows.push({
    system,
    scenario,
    concurrency,
    p50: spread(runs.map((r) => r.p50Ms)),
    p99: spread(runs.map((r) => r.p99Ms)),
    rps: spread(runs.map((r) => r.callsPerSec)),
    errors: runs.reduce((n, r) => n + r.errors, 0),
  });
  // Progress as figures finish (a full run takes many minutes): on stderr, the table stays on stdout.
  const row = rows.at(-1)!;
  console.error(`  ${system} · ${scenario} · conc. ${concurrency}: p50 ${fmt(row.p50)} ms, ${fmt(row.rps, 0)} calls/s, ${row.errors} errors`);
}

async function passThrough(): Promise<{ cpuMsPer1k?: number }> {
  const direct = await directClient();
  const gw = await startGateway(DEFAULT_CONFIG);
  const best = await startGateway(BEST_CONFIG, { LOG_LEVEL: 'warn' });
  const sdk = await sdkClient(gw.url);
  const peers = { 'mcp-proxy': await startPeer('mcp-proxy'), supergateway: await startPeer('supergateway') };
  const peerClients = { 'mcp-proxy': await peerClient(peers['mcp-proxy'].url), supergateway: await peerClient(peers.supergateway.url) };
  const floor = await startUrlProcess([...NODE_TSX, FLOOR, ...NODE_TSX, BACKEND]);
  const systems: Record<string, (text: string) => Promise<void>> = {
    'http-floor': async (text) => void (await rpc(floor.url, 'tools/call', { name: 'echo', arguments: { text } })),
    'mcp-proxy': async (text) => void (await peerClients['mcp-proxy'].callTool({ name: 'echo', arguments: { text } })),
    supergateway: async (text) => void (await peerClients.supergateway.callTool({ name: 'echo', arguments: { text } })),
    direct: async (text) => void (await direct.callTool({ name: 'echo', arguments: { text } })),
    gateway: async (text) => void (await rpc(gw.url, 'tools/call', { name: 'echo', arguments: { text } })),
    'gateway-best': async (text) => void (await rpc(best.url, 'tools/call', { name: 'echo', arguments: { text } })),
    'gateway-sdk': async (text) => void (await sdk.callTool({ name: 'echo', arguments: { text } })),
  };
  let cpuMsPer1k: number | undefined;
  try {
    for (const [label, text] of Object.entries(PAYLOADS)) {
      for (const concurrency of [1, 16, 64]) {
        const runs: Record<string, LoadResult[]> = {};
        for (let rep = 0; rep < REPEATS; rep++) {
          for (const [system, call] of Object.entries(systems)) {
            if (system === 'gateway-sdk' && label !== '16 B') continue;
            if (SYSTEMS && !SYSTEMS.has(system)) continue;
            const cpu0 = system === 'gateway' ? cpuTimeMs(gw.pid) : undefined;
            const r = await runLoad(() => call(text), { concurrency, total: CALLS[concurrency]!, warmup: WARMUP });
            const cpu1 = system === 'gateway' ? cpuTimeMs(gw.pid) : undefined;
            if (cpu0 !== undefined && cpu1 !== undefined && label === '16 B' && concurrency === 16) cpuMsPer1k = ((cpu1 - cpu0) / r.calls) * 1000;
            (runs[system] ??= []).push(r);
          }
        }
        for (const [system, r] of Object.entries(runs)) record(system, `echo ${label}`, concurrency, r);
      }
    }
  } finally {
    await sdk.close().catch(() => undefined);
    await direct.close();
    await Promise.all(Object.values(peerClients).map((c) => c.close().catch(() => undefined)));
    await Promise.all([gw.stop(), best.stop(), peers['mcp-proxy'].stop(), peers.supergateway.stop(), stopChild(floor.child)]);
  }
  return cpuMsPer1k === undefined ? {} : { cpuMsPer1k };
}

/** One MRTR round of `ask` through gateways: the call on `url`, its retry on `retryUrl` (default: the same). */
const askRound =
  (url: string, retryUrl = url) =>
  async (): Promise<void> => {
    const first = await rpc(url, 'tools/call', { name: 'ask', arguments: {} }, ELICIT);
    const key = Object.keys(first['inputRequests'] as object)[0]!;
    const params = {
      name: 'ask',
      arguments: {},
      inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
      requestState: first['requestState'],
    };
    await rpc(retryUrl, 'tools/call', params, ELICIT);
  };

/** Runs each system's rounds at concurrency 1 and 16 and records them under the `ask` scenario. */
async function measureRounds(systems: Record<string, () => Promise<void>>): Promise<void> {
  for (const concurrency of [1, 16]) {
    const runs: Record<string, LoadResult[]> = {};
    for (let rep = 0; rep < REPEATS; rep++) {
      for (const [system, call] of Object.entries(systems)) {
        if (SYSTEMS && !SYSTEMS.has(system)) continue;
        (runs[system] ??= []).push(await runLoad(call, { concurrency, total: CALLS[concurrency]! / 2, warmup: WARMUP / 2 }));
      }
    }
    for (const [system, r] of Object.entries(runs)) record(system, 'ask (one elicitation round)', concurrency, r);
  }
}

async function mrtrRound(): Promise<void> {
  const direct = await directClient();
  const gw = await startGateway(DEFAULT_CONFIG);
  const best = await startGateway(BEST_CONFIG, { LOG_LEVEL: 'warn' });
  const peers = { 'mcp-proxy': await startPeer('mcp-proxy'), supergateway: await startPeer('supergateway') };
  const peerClients = { 'mcp-proxy': await peerClient(peers['mcp-proxy'].url), supergateway: await peerClient(peers.supergateway.url) };
  const systems: Record<string, () => Promise<void>> = {
    'mcp-proxy': async () => void (await peerClients['mcp-proxy'].callTool({ name: 'ask', arguments: {} }, undefined, { timeout: 5_000 })),
    supergateway: async () => void (await peerClients.supergateway.callTool({ name: 'ask', arguments: {} }, undefined, { timeout: 5_000 })),
    direct: async () => void (await direct.callTool({ name: 'ask', arguments: {} })),
    gateway: askRound(gw.url),
    'gateway-best': askRound(best.url),
  };
  try {
    await measureRounds(systems);
  } finally {
    await direct.close();
    await Promise.all(Object.values(peerClients).map((c) => c.close().catch(() => undefined)));
    await Promise.all([gw.stop(), best.stop(), peers['mcp-proxy'].stop(), peers.supergateway.stop()]);
  }
}

/**
 * What a retry costs when it lands on the instance that does not hold its call (two instances on
 * Redis; the retry is forwarded to the owner) against a retry on the owner, both in cluster mode.
 */
async function clusterRetry(): Promise<void> {
  const env = {
    LOG_LEVEL: 'warn',
    MCP_GATEWAY_STATE_KEYS: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url'),
    MCP_GATEWAY_CLUSTER_SECRET: Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url'),
  };
  const prefix = `mcpgw-bench:${Date.now()}:`;
  const ports = [await freePort(), await freePort()];
  const config = (instanceId: string, port: number) => ({
    ...BEST_CONFIG,
    gateway: {
      ...BEST_CONFIG.gateway,
      maxParkedPerPrincipal: 4_096,
      maxParkedTotal: 4_096,
      cluster: { redis: REDIS_URL, keyPrefix: prefix, instanceId, internalUrl: `http://127.0.0.1:${port}` },
    },
  });
  const a = await startGateway(config('a', ports[0]!), env, [], ports[0]);
  const b = await startGateway(config('b', ports[1]!), env, [], ports[1]);
  try {
    await measureRounds({ 'cluster, retry on owner': askRound(a.url), 'cluster, retry forwarded': askRound(a.url, b.url) });
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

/**
 * The gateway (default config) under a CPU profile while it serves pass-through calls and MRTR rounds
 * at concurrency 16; the raw `.cpuprofile` (for DevTools) and a markdown summary of the top self-time
 * functions are written beside the JSON.
 */
async function profileGateway(): Promise<{ file: string; summary: ProfileSummary }> {
  const raw = OUT.replace(/\.json$/, '') + '.cpuprofile';
  mkdirSync(dirname(raw), { recursive: true });
  const gw = await startGateway(DEFAULT_CONFIG, { LOG_LEVEL: 'warn' });
  try {
    const echo = async (): Promise<void> => void (await rpc(gw.url, 'tools/call', { name: 'echo', arguments: { text: PAYLOADS['16 B'] } }));
    const ask = async (): Promise<void> => {
      const first = await rpc(gw.url, 'tools/call', { name: 'ask', arguments: {} }, ELICIT);
      const key = Object.keys(first['inputRequests'] as object)[0]!;
      const answer = { [key]: { action: 'accept', content: { name: 'Ada' } } };
      await rpc(gw.url, 'tools/call', { name: 'ask', arguments: {}, inputResponses: answer, requestState: first['requestState'] }, ELICIT);
    };
    // Warm both paths (sessions, views, JIT) before the profiler starts.
    await runLoad(echo, { concurrency: 16, total: WARMUP, warmup: 0 });
    await runLoad(ask, { concurrency: 16, total: WARMUP, warmup: 0 });
    await gw.profileStart();
    await runLoad(echo, { concurrency: 16, total: CALLS[16]!, warmup: 0 });
    await runLoad(ask, { concurrency: 16, total: CALLS[16]! / 2, warmup: 0 });
    await gw.profileStop(raw);
  } finally {
    await gw.stop();
  }
  const summary = summariseProfile(raw, ROOT);
  const file = OUT.replace(/\.json$/, '') + '.profile.md';
  writeFileSync(file, profileMarkdown(summary, `Gateway CPU profile: ${CALLS[16]} pass-through calls and ${CALLS[16]! / 2} MRTR rounds at concurrency 16`));
  return { file, summary };
}

async function sealOpen(): Promise<number> {
  const codec = await createRequestStateCodec({ keys: [await randomStateKey()], ttlSeconds: 600 });
  const ctx = { principal: 'alice', method: 'tools/call', digest: 'x'.repeat(43) };
  const payload = { call: '01JBENCHCALLID0000000000000', instance: 'single', round: 1 };
  const n = quick ? 2_000 : 20_000;
  for (let i = 0; i < 200; i++) await codec.open(await codec.seal(payload, ctx), ctx);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const opened = await codec.open(await codec.seal(payload, ctx), ctx);
    if (!opened.ok) throw new Error('open failed');
  }
  return ((performance.now() - t0) * 1000) / n;
}

interface MemoryPoint {
  readonly parked: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
}

/** Spawns a process that prints `URL <url>` once it listens, and waits for that line. */
async function startUrlProcess(argv: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${argv.join(' ')} did not start`)), 20_000);
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('URL ')) {
        clearTimeout(t);
        resolve(l.slice(4));
      }
    });
  });
  return { child, url };
}

async function parkedMemory(): Promise<{ baseline: MemoryPoint; points: MemoryPoint[] }> {
  const { child: backend, url } = await startUrlProcess([...NODE_TSX, BACKEND, '--http']);
  const max = PARKED[PARKED.length - 1]!;
  const gw = await startGateway(
    {
      mcpServers: { bench: { url, ...(process.env['BENCH_SHARED'] ? { sessionMode: 'shared' } : {}) } },
      gateway: { maxParkedTotal: max + 10, maxParkedPerPrincipal: max + 10, requestStateTtlSeconds: 3_600 },
    },
    { LOG_LEVEL: 'warn' },
  );
  const points: MemoryPoint[] = [];
  const at = async (parked: number): Promise<MemoryPoint> => {
    const m = await gw.memory();
    return { parked, rssBytes: rssBytes(gw.pid) ?? m.rss, heapUsedBytes: m.heapUsed };
  };
  let baseline: MemoryPoint;
  try {
    await runLoad(async () => void (await rpc(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'warm' } })), { concurrency: 8, total: 200, warmup: 0 });
    baseline = await at(0);
    let parked = 0;
    for (const target of PARKED) {
      await runLoad(async () => void (await rpc(gw.url, 'tools/call', { name: 'ask', arguments: {} }, ELICIT)), {
        concurrency: 64,
        total: target - parked,
        warmup: 0,
      });
      parked = target;
      points.push(await at(parked));
      if (process.env['BENCH_HEAP_SNAPSHOT']) await gw.heapSnapshot(`${process.env['BENCH_HEAP_SNAPSHOT']}-${parked}.heapsnapshot`);
    }
  } finally {
    await gw.stop();
    await stopChild(backend);
  }
  return { baseline, points };
}

const fmt = (s: Spread, digits = 2): string =>
  s.min === s.max ? s.median.toFixed(digits) : `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
const mb = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MB`;

async function main(): Promise<void> {
  // The clients in this process keep a listener per request on one long-lived signal until garbage
  // collection (fetch does); the warning printed for each would slow the load generator itself.
  setMaxListeners(0);
  const started = new Date();
  const startLoad = loadavg();
  console.error(
    `bench (${quick ? 'quick' : 'full'}): ${cpus().length} cores, Node ${process.version}; ${REPEATS} repeat(s) per figure; load average at start ${startLoad.map((l) => l.toFixed(2)).join(' ')}`,
  );
  const { cpuMsPer1k } = phase('pass-through') ? await passThrough() : {};
  const profile = phase('profile') ? await profileGateway() : undefined;
  if (phase('mrtr')) await mrtrRound();
  if (phase('cluster')) await clusterRetry();
  const sealOpenUs = phase('seal') ? await sealOpen() : NaN;
  const observe: ObserveFigures | undefined = phase('observe')
    ? await observeOverhead({
        start: (file, env) => startGateway(file, env),
        call: async (url) => void (await rpc(url, 'tools/call', { name: 'echo', arguments: { text: PAYLOADS['16 B'] } })),
        config: DEFAULT_CONFIG,
        repeats: REPEATS,
        total: quick ? 1_000 : 5_000,
        warmup: WARMUP,
      })
    : undefined;
  const none: MemoryPoint = { parked: 0, rssBytes: NaN, heapUsedBytes: NaN };
  const { baseline, points: memory } = phase('memory') ? await parkedMemory() : { baseline: none, points: [] };
  const base = baseline.rssBytes;
  const perCall = memory.map((m) => (m.rssBytes - base) / m.parked);
  const heapPerCall = memory.map((m) => (m.heapUsedBytes - baseline.heapUsedBytes) / m.parked);

  const lines: string[] = [];
  lines.push(
    `Measured ${started.toISOString().slice(0, 10)} on ${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}${quick ? ', quick run' : ''}, load average at start ${startLoad.map((l) => l.toFixed(2)).join(' ')}.`,
    '',
  );
  lines.push('| system | scenario | conc. | p50 ms | p99 ms | calls/s | errors |', '| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) lines.push(`| ${r.system} | ${r.scenario} | ${r.concurrency} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.rps, 0)} | ${r.errors} |`);
  lines.push('', '| figure | value |', '| --- | ---: |');
  lines.push(`| requestState seal + open | ${sealOpenUs.toFixed(1)} µs |`);
  if (cpuMsPer1k !== undefined) lines.push(`| gateway CPU per 1k pass-through calls (16 B, conc. 16) | ${cpuMsPer1k.toFixed(0)} ms |`);
  if (observe) {
    lines.push(
      `| the same, observing off / metrics on / tracing on (100% sampled) | ${observe.off.toFixed(0)} / ${observe.metrics.toFixed(0)} / ${observe.tracing.toFixed(0)} ms (${observe.exportedRequests} OTLP exports) |`,
    );
  }
  lines.push(`| gateway RSS / heap used, baseline | ${mb(base)} / ${mb(baseline.heapUsedBytes)} |`);
  memory.forEach((m, i) =>
    lines.push(
      `| gateway RSS / heap used with ${m.parked} parked calls | ${mb(m.rssBytes)} / ${mb(m.heapUsedBytes)} (${(perCall[i]! / 1024).toFixed(1)} / ${(heapPerCall[i]! / 1024).toFixed(1)} KiB per call) |`,
    ),
  );

  const row = (system: string, scenario: string, c: number) => rows.find((r) => r.system === system && r.scenario === scenario && r.concurrency === c);
  const p50 = (system: string, scenario: string, c: number) => row(system, scenario, c)?.p50.median ?? NaN;
  const rps = (system: string, scenario: string, c: number) => row(system, scenario, c)?.rps.median ?? NaN;
  const bestPeer = Math.max(rps('mcp-proxy', 'echo 16 B', 64), rps('supergateway', 'echo 16 B', 64));
  const targets: { target: string; value: number; limit: number; unit: string; atLeast?: boolean }[] = [
    {
      target: 'throughput at conc. 64 (16 B) ≥ 1.5× the best peer',
      value: rps('gateway', 'echo 16 B', 64) / bestPeer,
      limit: 1.5,
      unit: '× the best peer',
      atLeast: true,
    },
    {
      target: 'pass-through p50 at conc. 1 ≤ direct + 0.5 ms',
      value: p50('gateway', 'echo 16 B', 1) - p50('direct', 'echo 16 B', 1),
      limit: 0.5,
      unit: 'ms over direct',
    },
    {
      target: 'MRTR round ≤ 1.5× the direct in-session round (best config)',
      value: p50('gateway-best', 'ask (one elicitation round)', 1) / p50('direct', 'ask (one elicitation round)', 1),
      limit: 1.5,
      unit: '×',
    },
    { target: 'seal + open ≤ 50 µs', value: sealOpenUs, limit: 50, unit: 'µs' },
    { target: 'CPU per pass-through call, metrics on ≤ 1.05× off', value: observe ? observe.metrics / observe.off : NaN, limit: 1.05, unit: '×' },
    { target: 'CPU per pass-through call, tracing on (100%) ≤ 1.15× off', value: observe ? observe.tracing / observe.off : NaN, limit: 1.15, unit: '×' },
    {
      target: `${PARKED[PARKED.length - 1]} parked calls < 200 MB RSS`,
      value: (memory[memory.length - 1]?.rssBytes ?? NaN) / 1024 / 1024,
      limit: 200,
      unit: 'MB',
    },
    {
      target: 'parked-call memory grows linearly (per-call cost ratio ≤ 1.5)',
      value: perCall.length > 1 ? Math.max(...perCall) / Math.min(...perCall) : NaN,
      limit: 1.5,
      unit: '×',
    },
  ];
  lines.push('', '| target | measured | met |', '| --- | ---: | :---: |');
  const met = (t: (typeof targets)[number]): boolean => (t.atLeast ? t.value >= t.limit : t.value <= t.limit);
  for (const t of targets) lines.push(`| ${t.target} | ${t.value.toFixed(2)} ${t.unit} | ${met(t) ? 'yes' : 'no'} |`);
  // Context for the targets: what the HTTP hop alone costs here, and a round against two plain calls.
  const floorOver = p50('http-floor', 'echo 16 B', 1) - p50('direct', 'echo 16 B', 1);
  const context = [
    ['HTTP hop floor (bare node:http + stdio forwarder), p50 over direct at conc. 1', `${floorOver.toFixed(2)} ms`],
    ['gateway p50 over that floor at conc. 1', `${(p50('gateway', 'echo 16 B', 1) - p50('http-floor', 'echo 16 B', 1)).toFixed(2)} ms`],
    ['gateway throughput at conc. 64 against the floor', `${(rps('gateway', 'echo 16 B', 64) / rps('http-floor', 'echo 16 B', 64)).toFixed(2)} ×`],
    [
      'MRTR round with the retry forwarded to the owner against the retry on the owner (cluster mode, best config), p50 at conc. 1',
      `${(p50('cluster, retry forwarded', 'ask (one elicitation round)', 1) / p50('cluster, retry on owner', 'ask (one elicitation round)', 1)).toFixed(2)} ×`,
    ],
    [
      'MRTR round (best config) against two pass-through calls (best config), p50 at conc. 1',
      `${(p50('gateway-best', 'ask (one elicitation round)', 1) / (2 * p50('gateway-best', 'echo 16 B', 1))).toFixed(2)} ×`,
    ],
  ];
  lines.push('', '| context | value |', '| --- | ---: |', ...context.map(([k, v]) => `| ${k} | ${v} |`));
  const table = lines.join('\n');
  console.log(table);

  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(
    OUT,
    JSON.stringify(
      {
        date: started.toISOString(),
        quick,
        loadAverageAtStart: startLoad,
        cores: cpus().length,
        node: process.version,
        rows,
        sealOpenUs,
        cpuMsPer1k,
        observe,
        memory: { baseline, points: memory },
        profile: profile?.summary,
        targets,
        context: Object.fromEntries(context),
      },
      null,
      2,
    ),
  );
  console.error(`figures written to ${OUT}${profile ? `; CPU profile summary in ${profile.file}` : ''}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(`bench failed: ${(e as Error).stack ?? String(e)}`);
    process.exit(1);
  },
);
