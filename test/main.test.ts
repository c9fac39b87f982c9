/**
 * The entry point as a user runs it: a bad config fails at start-up listing every problem; the default
 * (demo backend) serves /healthz and MCP, and SIGTERM drains.
 */
import { execFileSync, spawn } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { nodeArgs } from './helpers/built.js';
import { REDIS_URL, redisPrefix } from './helpers/redis.js';
import { ownRedis } from './helpers/redis-server.js';
import { until } from './helpers/until.js';
import { META_CAPS, META_VERSION, post } from './helpers/wire.js';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const DEMO_BACKEND = fileURLToPath(new URL('../src/demo/demo-backend.ts', import.meta.url));

function run(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [...nodeArgs(MAIN), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  return { child, exited, stderr: () => stderr };
}

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const ADMIN_AUTH = { authorization: `Bearer ${ADMIN_KEY}` };

/** The entry point on the demo backend with `gateway` settings and an admin listener on a port of its own (its key in ADMIN_KEY). */
function runWithAdmin(gateway: Record<string, unknown>) {
  const file = join(mkdtempSync(join(tmpdir(), 'admin-cli-')), 'gateway.json');
  const config = {
    mcpServers: { demo: { command: process.execPath, args: nodeArgs(DEMO_BACKEND) } },
    gateway: { ...gateway, admin: { port: 0, keyEnv: 'ADMIN_KEY' } },
  };
  writeFileSync(file, JSON.stringify(config));
  return run(['--config', file, '--port', '0'], { ADMIN_KEY });
}

/** The admin listener's URL, once the process has logged it. */
async function adminUrl(p: ReturnType<typeof run>): Promise<string> {
  let admin = '';
  await until('the admin listener', () => (admin = /"url":"(http:[^"]+)","msg":"admin listening"/.exec(p.stderr())?.[1] ?? '') !== '');
  return admin;
}

/** What the admin listener's /metrics answers. */
async function scrapeMetrics(p: ReturnType<typeof run>): Promise<string> {
  return (await fetch(new URL('/metrics', await adminUrl(p)), { headers: ADMIN_AUTH })).text();
}

describe('mcp-mrtr-gateway (entry point)', () => {
  it('fails at start-up with every config problem listed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'gateway.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { 'bad name': { command: 'x' }, web: { url: 'ftp://nope' } }, gateway: { port: -1 } }));
    const p = run(['--config', file]);
    expect(await p.exited).toBe(2);
    const lines = p
      .stderr()
      .split('\n')
      .filter((l) => l.trim().startsWith('- '));
    expect(lines.length).toBeGreaterThanOrEqual(3);
  });

  it('answers an unknown option, a port that is no number and a port in use with one clear line and exit 2', async () => {
    const bad = run(['--bogus']);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr().trim().split('\n')).toHaveLength(1);
    expect(bad.stderr()).toMatch(/Unknown option '--bogus'/);
    const level = run([], { LOG_LEVEL: 'verbose' });
    expect(await level.exited).toBe(2);
    expect(level.stderr()).toMatch(/LOG_LEVEL "verbose": expected one of fatal, error, warn, info, debug, trace, silent/);
    expect(level.stderr()).not.toMatch(/\n\s+at /);
    const notPort = run(['--port', 'abc']);
    expect(await notPort.exited).toBe(2);
    expect(notPort.stderr()).toMatch(/--port abc: expected a port number/);
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (blocker.address() as AddressInfo).port;
      const busy = run(['--port', String(port)]);
      expect(await busy.exited).toBe(2);
      expect(busy.stderr()).toMatch(new RegExp(`cannot listen: port ${port} on 127.0.0.1 is already in use`));
      expect(busy.stderr()).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      blocker.close();
    }
  });

  it("refuses a second process started with a live instance's config before it joins the cluster: the live one stays in it", async () => {
    const { prefix, cleanup } = redisPrefix();
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as AddressInfo).port;
    await new Promise((r) => blocker.close(r));
    const dir = mkdtempSync(join(tmpdir(), 'dup-'));
    const file = join(dir, 'gateway.json');
    const internalUrl = `http://127.0.0.1:${port}`;
    // No heartbeat during the test: what the second process does to Redis is not written over by the first.
    const cluster = { redis: REDIS_URL, keyPrefix: prefix, instanceId: 'dup', internalUrl, heartbeatMs: 60_000 };
    writeFileSync(file, JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: nodeArgs(DEMO_BACKEND) } }, gateway: { cluster } }));
    const env = { MCP_GATEWAY_CLUSTER_SECRET: 'a-cluster-secret-of-at-least-32-bytes!' };
    const redis = createClient({ url: REDIS_URL });
    await redis.connect();
    const live = run(['--config', file, '--port', String(port)], env);
    try {
      await until('the first process to listen', () => live.stderr().includes('gateway listening') || live.child.exitCode !== null);
      const member = async () => ({ url: await redis.hGet(`${prefix}instance-urls`, 'dup'), beat: await redis.zScore(`${prefix}instances`, 'dup') });
      const before = await member();
      expect(before.url).toBe(internalUrl);
      const second = run(['--config', file, '--port', String(port)], env);
      expect(await second.exited).toBe(2);
      expect(second.stderr()).toMatch(new RegExp(`cannot listen: port ${port} on 127.0.0.1 is already in use`));
      // It never joined, so it did not leave either: the live instance's URL and heartbeat are as they were.
      expect(await member()).toEqual(before);
    } finally {
      live.child.kill('SIGTERM');
      await live.exited;
      await redis.close();
      await cleanup();
    }
  });

  it('exits 1 with one line when Redis never answers at start, rather than holding its port as a gateway forever starting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'no-redis-'));
    const file = join(dir, 'gateway.json');
    const cluster = { redis: 'redis://127.0.0.1:1', instanceId: 'lonely', startTimeoutMs: 500 };
    writeFileSync(file, JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: nodeArgs(DEMO_BACKEND) } }, gateway: { cluster } }));
    const p = run(['--config', file, '--port', '0'], { MCP_GATEWAY_CLUSTER_SECRET: 'a-cluster-secret-of-at-least-32-bytes!' });
    expect(await p.exited).toBe(1);
    expect(p.stderr()).toMatch(/cannot start: Redis at redis:\/\/127\.0\.0\.1:1 did not answer within 500 ms/);
    expect(p.stderr()).not.toMatch(/\n\s+at /);
  });

  it('stops on SIGTERM with its Redis gone: drained and exit 0, not held to its shutdown deadline', async () => {
    const own = await ownRedis();
    const dir = mkdtempSync(join(tmpdir(), 'redis-gone-'));
    const file = join(dir, 'gateway.json');
    const cluster = { redis: own.url, instanceId: 'alone', internalUrl: 'http://127.0.0.1:1' };
    // Before, a close waiting on the subscriber held the stop until this deadline (and 5 s more), then exited 1.
    const gateway = { cluster, drainTimeoutMs: 20_000 };
    writeFileSync(file, JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: nodeArgs(DEMO_BACKEND) } }, gateway }));
    const p = run(['--config', file, '--port', '0'], { MCP_GATEWAY_CLUSTER_SECRET: 'a-cluster-secret-of-at-least-32-bytes!' });
    try {
      await until('the gateway to listen', () => p.stderr().includes('gateway listening') || p.child.exitCode !== null);
      await own.stop();
      await until('the gateway to see Redis gone', () => /redis (subscriber )?connection lost/.test(p.stderr()) || p.child.exitCode !== null);
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
      expect(p.stderr()).toMatch(/"msg":"drained: closed"\}\n$/);
    } finally {
      p.child.kill('SIGKILL');
      await own.stop();
    }
  }, 60_000);

  it('refuses a malformed state key', async () => {
    const p = run(['--port', '0'], { MCP_GATEWAY_STATE_KEYS: 'too-short' });
    expect(await p.exited).toBe(2);
    expect(p.stderr()).toMatch(/MCP_GATEWAY_STATE_KEYS/);
    expect(p.stderr()).not.toMatch(/too-short/);
  });

  it('serves the demo backend by default and drains on SIGTERM', async () => {
    const p = run(['--port', '0']);
    let url = '';
    await until('the gateway to listen', () => (url = /"url":"(http:[^"]+)"/.exec(p.stderr())?.[1] ?? '') !== '');
    const health = await fetch(new URL('/healthz', url));
    expect(health.ok).toBe(true);
    // An idle connection is kept past a balancer's 60 s (Node's own 5 s made ALB/nginx reuse closing ones).
    expect(health.headers.get('keep-alive')).toBe('timeout=65');
    const r1 = await post(url, 'tools/call', { name: 'greet', arguments: {} }, { caps: { elicitation: {} } });
    const { requestState, inputRequests } = r1.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(inputRequests)[0]!;
    const r2 = await post(
      url,
      'tools/call',
      { name: 'greet', arguments: {}, inputResponses: { [key]: { action: 'accept', content: { name: 'Newcomer' } } }, requestState },
      { caps: { elicitation: {} } },
    );
    expect(r2.message['result']).toMatchObject({ content: [{ text: 'Hello, Newcomer!' }] });
    expect(p.stderr()).toMatch(/MCP_GATEWAY_STATE_KEYS is not set/);
    // Log lines are written in batches: a quiet gateway's lines still come out soon, while it runs...
    await until('the two exchanges logged', () => p.stderr().match(/"msg":"mcp"/g)?.length === 2);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    // ...and the last ones when it exits.
    expect(p.stderr()).toMatch(/"msg":"drained: closed"\}\n$/);
  });

  // Linux: the test finds the gateway's threads and children in /proc.
  it.skipIf(process.platform !== 'linux')(
    'started by `npm start`, drains when the shell npm ran it in ends (sh passes no SIGTERM on); started otherwise, runs on',
    async () => {
      // What npm does: `sh -c '<the start script>'`; dash runs the command as its child, not in its place
      // (bash would exec it, and signals would reach it: the trailing `exit` keeps any shell in between).
      const viaShell = (lifecycle: string, args: string[] = []) => {
        const command = `${[process.execPath, ...nodeArgs(MAIN), '--port', '0', ...args].map((w) => `'${w}'`).join(' ')}; exit $?`;
        const sh = spawn('/bin/sh', ['-c', command], { env: { ...process.env, npm_lifecycle_event: lifecycle }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        sh.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        return { sh, stderr: () => stderr };
      };
      const alive = (pid: number) => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      const started = async (p: ReturnType<typeof viaShell>) => {
        let url = '';
        await until('the gateway to listen', () => (url = /"url":"(http:[^"]+)"/.exec(p.stderr())?.[1] ?? '') !== '');
        const pid = Number(/"pid":(\d+)/.exec(p.stderr())?.[1]);
        expect(pid).not.toBe(p.sh.pid); // the shell did not exec it: SIGTERM to the shell never reaches it
        return { url, pid };
      };
      const npm = viaShell('start');
      const other = viaShell('test');
      const [a, b] = await Promise.all([started(npm), started(other)]);
      try {
        npm.sh.kill('SIGTERM');
        other.sh.kill('SIGTERM');
        await until('the npm-started gateway to drain and exit', () => !alive(a.pid) && /"msg":"drained: closed"/.test(npm.stderr()), 15_000);
        expect(npm.stderr()).toMatch(/"signal":"npm start ended"/);
        // Started any other way (`nohup node dist/main.js &` from a shell that then ends), it serves on.
        expect((await fetch(new URL('/healthz', b.url))).ok).toBe(true);
        expect(other.stderr()).not.toMatch(/shutting down/);
      } finally {
        for (const pid of [a.pid, b.pid]) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
      // Its shell ended while it started (npm stopped at once): it drains once it serves. The config is a
      // FIFO the test writes only once the shell is gone, so the gateway is held in its start-up till then.
      const fifo = join(mkdtempSync(join(tmpdir(), 'npm-start-')), 'gateway.json');
      execFileSync('mkfifo', [fifo]);
      const early = viaShell('start', ['--config', fifo]);
      // A thread of it waits in the FIFO's open for a writer (Linux: its wchan).
      const opening = (pid: number) => {
        try {
          return readdirSync(`/proc/${pid}/task`).some((t) => readFileSync(`/proc/${pid}/task/${t}/wchan`, 'utf8') === 'wait_for_partner');
        } catch {
          return false;
        }
      };
      let gatewayPid = 0;
      await until('the gateway to open its config', () => {
        gatewayPid = Number(readFileSync(`/proc/${early.sh.pid}/task/${early.sh.pid}/children`, 'utf8').trim().split(/\s+/)[0] ?? 0);
        return gatewayPid > 0 && opening(gatewayPid);
      });
      early.sh.kill('SIGTERM');
      await until('the shell to end', () => !alive(early.sh.pid!));
      writeFileSync(fifo, JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: nodeArgs(DEMO_BACKEND) } } }));
      const c = await started(early);
      expect(c.pid).toBe(gatewayPid);
      try {
        await until('the gateway whose shell ended at start to drain and exit', () => !alive(c.pid) && /"msg":"drained: closed"/.test(early.stderr()), 15_000);
      } finally {
        if (alive(c.pid)) process.kill(c.pid, 'SIGKILL');
      }
    },
  );

  it('cuts off a request whose body trickles past requestTimeoutMs (408), where Node allows 300 s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'gateway.json');
    writeFileSync(
      file,
      JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: nodeArgs(DEMO_BACKEND) } }, gateway: { requestTimeoutMs: 1_000 } }),
    );
    const p = run(['--config', file, '--port', '0']);
    try {
      let url = '';
      await until('the gateway to listen', () => (url = /"url":"(http:[^"]+)"/.exec(p.stderr())?.[1] ?? '') !== '');
      const { hostname, port, pathname } = new URL(url);
      const socket = connect(Number(port), hostname);
      let answer = '';
      socket.on('data', (d: Buffer) => (answer += d.toString()));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.write(`POST ${pathname} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
      // One byte every 100 ms: the body would take 100 s to arrive.
      const trickle = setInterval(() => socket.write(' '), 100);
      try {
        await until('the connection cut off', () => socket.destroyed || answer !== '', 10_000);
        await closed;
      } finally {
        clearInterval(trickle);
        socket.destroy();
      }
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      // With a JSON-RPC error a client can read, not Node's bare status line.
      expect(answer).toMatch(/content-type: application\/json/i);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringMatching(/requestTimeoutMs \(1000 ms\)/) },
      });
      // The gateway serves on.
      expect((await fetch(new URL('/healthz', url))).ok).toBe(true);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });

  it('holds gateway.maxConnections client connections: one more is closed as it comes, and logged', async () => {
    const p = runWithAdmin({ maxConnections: 16 });
    const sockets: ReturnType<typeof connect>[] = [];
    try {
      let url = '';
      await until('the gateway to listen', () => (url = /"url":"(http:[^"]+)"/.exec(p.stderr())?.[1] ?? '') !== '');
      const { hostname, port } = new URL(url);
      /** A connection the gateway has taken: it answered a request on it, and keeps it open. */
      const held = (): Promise<ReturnType<typeof connect>> =>
        new Promise((resolve, reject) => {
          const socket = connect(Number(port), hostname, () => socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`));
          sockets.push(socket);
          socket.once('data', () => resolve(socket));
          socket.once('error', reject);
          socket.once('close', () => reject(new Error('closed before it was answered')));
        });
      for (let i = 0; i < 16; i++) await held();
      const extra = connect(Number(port), hostname);
      sockets.push(extra);
      let got = '';
      extra.on('data', (d: Buffer) => (got += d.toString()));
      extra.on('error', () => undefined);
      await new Promise<void>((resolve) => extra.once('close', () => resolve()));
      expect(got).toBe('');
      await until('the drop logged', () => p.stderr().includes('gateway.maxConnections are open'));
      // And counted (the admin listener has connections of its own).
      expect(await scrapeMetrics(p)).toMatch(/^mcp_gateway_connections_closed_total\{reason="max_connections"\} 1$/m);
      // One of the held connections goes: a new one is taken again.
      sockets[0]!.destroy();
      await until(
        'a connection to be taken again',
        async () =>
          await fetch(new URL('/healthz', url)).then(
            (r) => r.ok,
            () => false,
          ),
      );
    } finally {
      for (const s of sockets) s.destroy();
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });

  it('closes the connection of a client that takes nothing of its answers past gateway.sendTimeoutMs, and serves the others', async () => {
    const p = runWithAdmin({ sendTimeoutMs: 3_000 });
    const closedBySendTimeout = async (): Promise<string | undefined> =>
      /^mcp_gateway_connections_closed_total\{reason="send_timeout"\} (\d+)$/m.exec(await scrapeMetrics(p))?.[1];
    // Three echo calls pipelined on one connection: their answers are far more than the loopback's
    // socket buffers take from a client that reads nothing.
    const text = 'x'.repeat(3 * 1024 * 1024);
    const calls = 3;
    const pipelined = (url: string): ReturnType<typeof connect> => {
      const { hostname, port, pathname } = new URL(url);
      const socket = connect(Number(port), hostname);
      socket.pause();
      socket.on('error', () => undefined);
      for (let id = 1; id <= calls; id++) {
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'echo', arguments: { text }, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: {} } },
        });
        socket.write(
          `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
            `Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n${id === calls ? 'Connection: close\r\n' : ''}` +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
      }
      return socket;
    };
    const sockets: ReturnType<typeof connect>[] = [];
    try {
      let url = '';
      await until('the gateway to listen', () => (url = /"url":"(http:[^"]+)"/.exec(p.stderr())?.[1] ?? '') !== '');
      // A client that reads: every answer arrives whole (the last request asks the server to close after it), nothing is cut.
      const reader = pipelined(url);
      sockets.push(reader);
      const chunks: Buffer[] = [];
      reader.on('data', (d: Buffer) => chunks.push(d));
      reader.resume();
      await new Promise((r) => reader.once('close', r));
      const answers = Buffer.concat(chunks).toString('latin1');
      expect(answers.split('HTTP/1.1 200').length - 1).toBe(calls);
      expect(answers.length).toBeGreaterThan(calls * text.length);
      expect(p.stderr()).not.toContain('gateway.sendTimeoutMs');
      const stalled = pipelined(url);
      sockets.push(stalled);
      expect(await closedBySendTimeout()).toBeUndefined();
      // A client that reads nothing: cut past the deadline, logged and counted.
      await until('the cut logged', () => p.stderr().includes('it took nothing of what was sent to it for gateway.sendTimeoutMs'));
      expect(await closedBySendTimeout()).toBe('1');
      let got = 0;
      stalled.on('data', (d: Buffer) => (got += d.length));
      const closed = new Promise((r) => stalled.once('close', r));
      stalled.resume();
      await closed;
      expect(got).toBeLessThan(calls * text.length);
      // Still serving.
      const r = await post(url, 'tools/call', { name: 'echo', arguments: { text: 'after' } });
      expect(r.message['result']).toMatchObject({ content: [{ type: 'text', text: 'after' }] });
    } finally {
      for (const s of sockets) s.destroy();
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });

  it("serves /metrics and the admin page on their own port, and the page's drain stops the process like SIGTERM", async () => {
    const p = runWithAdmin({});
    const admin = await adminUrl(p);
    const auth = ADMIN_AUTH;
    const metrics = await fetch(new URL('/metrics', admin), { headers: auth });
    expect(metrics.status).toBe(200);
    const scraped = await metrics.text();
    expect(scraped).toContain('mcp_gateway_backend_up{backend="demo"}');
    expect(scraped).toContain('process_cpu_user_seconds_total');
    // Pressed twice (a double click, two operators): one drain, never the second signal's "close now".
    const drain = () => fetch(new URL('/drain', admin), { method: 'POST', headers: { ...auth, 'x-admin-action': '1' } });
    const [first, second] = await Promise.all([drain(), drain()]);
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(await p.exited).toBe(0);
    expect(p.stderr()).toMatch(/"signal":"admin".*"msg":"shutting down"/);
    expect(p.stderr()).not.toMatch(/second stop signal/);
  });

  it('exits 2 when the admin port is taken, its client port closed too (nothing keeps it alive)', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (blocker.address() as AddressInfo).port;
      const dir = mkdtempSync(join(tmpdir(), 'admin-busy-'));
      const file = join(dir, 'gateway.json');
      writeFileSync(file, JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: nodeArgs(DEMO_BACKEND) } }, gateway: { admin: { port } } }));
      const busy = run(['--config', file, '--port', '0']);
      expect(await busy.exited).toBe(2);
      expect(busy.stderr()).toMatch(new RegExp(`cannot listen \\(admin\\): port ${port} on 127.0.0.1 is already in use`));
    } finally {
      blocker.close();
    }
  });

  it('starts from a VS Code .vscode/mcp.json as the host wrote it: its servers, ${workspaceFolder} as the workspace, host settings ignored', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ws-'));
    mkdirSync(join(workspace, '.vscode'));
    // The server lives in the workspace and is named through ${workspaceFolder}, as VS Code users write it.
    writeFileSync(join(workspace, 'server.mts'), `import ${JSON.stringify(DEMO_BACKEND)};\n`);
    const file = join(workspace, '.vscode', 'mcp.json');
    const entry = { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', '${workspaceFolder}/server.mts'] };
    writeFileSync(file, JSON.stringify({ inputs: [], servers: { demo: entry }, someHostSetting: true }));
    const p = run(['--config', file, '--port', '0']);
    let url = '';
    await until('the gateway to listen (or exit)', () => (url = /"url":"(http:[^"]+)"/.exec(p.stderr())?.[1] ?? '') !== '' || p.child.exitCode !== null);
    expect(url, p.stderr()).not.toBe('');
    // Ready once its one backend is up (started through the expanded path).
    await until('the gateway to be ready', () =>
      fetch(new URL('/readyz', url)).then(
        (r) => r.ok,
        () => false,
      ),
    );
    const r1 = await post(url, 'tools/call', { name: 'greet', arguments: {} }, { caps: { elicitation: {} } });
    expect(r1.message['result'], JSON.stringify(r1.message)).toMatchObject({ resultType: 'input_required' });
    expect(p.stderr()).toMatch(/ignored top-level keys \(the host's own settings\): someHostSetting/);
    // Its call is parked: a second stop signal skips the drain's wait for it.
    p.child.kill('SIGTERM');
    await until('the drain to begin', () => p.stderr().includes('shutting down'));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });
});
