/**
 * The processes a bench run measures, each started as its own process on 127.0.0.1 and stopped by its
 * own id: the gateway (built dist/, with bench/probe.mjs preloaded), the two peer gateways with their
 * own CLIs, the HTTP floor and the HTTP backend; and the gateway configs the figures use.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { v1Client } from './clients.js';
import { GATEWAY_DIST, ROOT } from './options.js';
import { GroupReaper } from '../src/core/backend/group-reaper.js';
import { endProcessGroup, groupAlive } from '../src/core/backend/process-group.js';
import { silentLogger } from '../src/log.js';

const NODE = process.execPath;
/**
 * The Node flags `npm start` runs the gateway with (the words between `node` and the script in
 * package.json's start script; none today), read from there so the bench runs it as `npm start` does. Every other Node process a figure compares
 * it with gets the same flags (the floor, the relay and the two peers): the figures compare code, not
 * runtime flags.
 */
export const START_FLAGS: readonly string[] = startFlags();

/** The words between `node` and the script in the start script (`node --a --b dist/main.js --port 1` gives `--a --b`). */
function startFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const words = (pkg.scripts?.start ?? '').split(/\s+/);
  const flags: string[] = [];
  for (const word of words.slice(words.indexOf('node') + 1)) {
    if (!word.startsWith('-')) break;
    flags.push(word);
  }
  return flags;
}
/** How long a process may take to come up (generous: a loaded machine starts Node slowly). */
const START_MS = 120_000;
/** The stdio backend, plain JavaScript (no TypeScript loader in each backend process). */
export const BACKEND_STDIO = [NODE, join(ROOT, 'bench', 'backend.mjs')] as const;
/** The same backend over streamable HTTP (prints `URL <url>`). */
export const BACKEND_HTTP = [NODE, '--import', 'tsx', join(ROOT, 'bench', 'backend.ts')] as const;
export const FLOOR = [NODE, ...START_FLAGS, '--import', 'tsx', join(ROOT, 'bench', 'floor.ts')] as const;
/** A bare node:http relay to one target (bench/relay.ts): the floor of a forward between instances. */
export const RELAY = [NODE, ...START_FLAGS, '--import', 'tsx', join(ROOT, 'bench', 'relay.ts')] as const;

export const backendEntry = (extra: Record<string, unknown> = {}) => ({ command: BACKEND_STDIO[0], args: BACKEND_STDIO.slice(1), ...extra });
export const DEFAULT_CONFIG = { mcpServers: { bench: backendEntry() } };
/** The tuning README documents: long list cache, no coalescing window, sessions shared across principals, warn-level logs. */
export const BEST_CONFIG = { mcpServers: { bench: backendEntry({ isolation: 'shared' }) }, gateway: { cacheTtlMs: 3_600_000, coalesceMs: 0 } };

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

export interface SystemProcess {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface ProbedGateway extends SystemProcess {
  /** RSS and heap of the gateway after a full GC (bench/probe.mjs answers over IPC). */
  memory(): Promise<NodeJS.MemoryUsage>;
  /** Starts the gateway's CPU profiler; `profileStop` writes the profile to `file`. */
  profileStart(): Promise<void>;
  profileStop(file: string): Promise<void>;
  heapSnapshot(file: string): Promise<void>;
  /** Starts sampling every allocation (freed ones kept); `allocStop` writes the `.heapprofile` to `file`. */
  allocStart(): Promise<void>;
  allocStop(file: string): Promise<void>;
}

/**
 * The systems started here (peers, floor, relay, HTTP backend, gateways), by process group: each is
 * started as the leader of a group of its own (a peer's stdio backend is in its group) and listed with
 * a group reaper of its own (src/core/backend/group-reaper.ts), which ends the groups if the bench
 * dies without stopping them (SIGKILL, an OOM). Ctrl-C and SIGTERM stop them (run.ts); a gateway also
 * stops by itself when the bench's channel to it closes (bench/probe.mjs).
 */
const running = new Map<number, ChildProcess>();
/** Stops under way, by process group: a second stop of the same system waits for the first. */
const stops = new Map<number, Promise<void>>();
/** How long a system has between SIGTERM and SIGKILL when it is stopped (a gateway drains first). */
const STOP_GRACE_MS = 10_000;
/** The bench's own reaper, with a gateway's whole stop as its grace (a second SIGTERM would close it at once). */
const reaper = new GroupReaper(STOP_GRACE_MS);
/** Set once the bench is stopping everything: a system that starts after that is stopped at once. */
let stoppingAll = false;

/** Lists `child` (spawned `detached`) until it is stopped, or its group is gone after it exited. */
function tracked<T extends ChildProcess>(child: T): T {
  const pgid = child.pid;
  if (pgid === undefined) return child;
  running.set(pgid, child);
  reaper.watch(pgid, silentLogger);
  child.once('exit', () => {
    // Exited by itself: once nothing of its group is left, the id is no longer its to be signalled by.
    groupAlive(pgid)
      .then(async (alive) => {
        if (alive || running.get(pgid) !== child) return;
        running.delete(pgid);
        await reaper.release(pgid);
      })
      .catch(() => undefined); // never rejects
  });
  if (stoppingAll) stopChild(child).catch(() => undefined); // stopAll waits for it (it is listed)
  return child;
}

/** Stops every system started here that still runs, and any started meanwhile (the bench was interrupted or failed). */
export async function stopAll(): Promise<void> {
  stoppingAll = true;
  while (running.size > 0) await Promise.all([...running.values()].map((child) => stopChild(child)));
}

/**
 * A system's whole group: SIGTERM, SIGKILL after STOP_GRACE_MS, until none of it is left (once: a
 * second stop waits for the first). Any other process: SIGTERM, then SIGKILL after 10 s; resolves
 * once it exited.
 */
export async function stopChild(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  const under = pgid !== undefined ? stops.get(pgid) : undefined;
  if (under) return under;
  if (pgid !== undefined && running.get(pgid) === child) {
    const stop = (async () => {
      await endProcessGroup(pgid, STOP_GRACE_MS);
      running.delete(pgid);
      await reaper.release(pgid);
    })();
    stops.set(pgid, stop);
    // Settled, it is forgotten (the id may be another's later); a later stop finds the process exited.
    return stop.finally(() => stops.delete(pgid));
  }
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function waitReady(base: string): Promise<void> {
  const deadline = Date.now() + START_MS;
  for (;;) {
    const ok = await fetch(`${base}/readyz`).then(
      async (r) => r.ok && ((await r.json()) as { status: string }).status === 'ready',
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error('gateway did not become ready');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Asks the preloaded probe something over IPC and waits for its one answer. */
function probeAsk(child: ChildProcess, message: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the gateway's probe did not answer ${message}`)), 60_000);
    child.once('message', (m) => {
      clearTimeout(t);
      const reply = m as { ok: boolean; error?: string };
      if (reply.ok) resolve(reply as Record<string, unknown>);
      else reject(new Error(`probe: ${reply.error}`));
    });
    child.send(message);
  });
}

/**
 * Starts the gateway as its own process (built dist/ when present) and waits until it is ready.
 * `nodeFlags` go to Node (a CPU profile, say); the bench's probe is preloaded so memory can be asked for.
 */
export async function startGateway(
  file: Record<string, unknown>,
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
  port?: number,
): Promise<ProbedGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gw-'));
  const config = join(dir, 'gateway.json');
  writeFileSync(config, JSON.stringify(file));
  port ??= await freePort();
  const dist = join(GATEWAY_DIST, 'main.js');
  const probe = ['--expose-gc', '--import', join(ROOT, 'bench', 'probe.mjs')];
  const entry = existsSync(dist) ? [dist] : ['--import', 'tsx', join(ROOT, 'src', 'main.ts')];
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
  const child = tracked(
    spawn(NODE, [...START_FLAGS, ...nodeFlags, ...probe, ...entry, '--config', config, '--port', String(port)], {
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      env: { ...process.env, MCP_GATEWAY_STATE_KEYS: key, ...env },
      detached: true,
    }),
  );
  try {
    await waitReady(`http://127.0.0.1:${port}`);
  } catch (e) {
    await stopChild(child);
    throw e;
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    pid: child.pid!,
    stop: () => stopChild(child),
    memory: async () => (await probeAsk(child, 'memory'))['memory'] as NodeJS.MemoryUsage,
    profileStart: async () => void (await probeAsk(child, 'profile-start')),
    profileStop: async (file) => void (await probeAsk(child, `profile-stop:${file}`)),
    heapSnapshot: async (file) => void (await probeAsk(child, `heap-snapshot:${file}`)),
    allocStart: async () => void (await probeAsk(child, 'alloc-start')),
    allocStop: async (file) => void (await probeAsk(child, `alloc-stop:${file}`)),
  };
}

export type Peer = 'mcp-proxy' | 'supergateway';

function peerArgv(kind: Peer, port: number): string[] {
  if (kind === 'mcp-proxy') {
    const bin = join(ROOT, 'node_modules', 'mcp-proxy', 'dist', 'bin', 'mcp-proxy.mjs');
    return [bin, '--host', '127.0.0.1', '--port', String(port), '--server', 'stream', '--', ...BACKEND_STDIO];
  }
  const bin = join(ROOT, 'node_modules', 'supergateway', 'dist', 'index.js');
  const stdio = BACKEND_STDIO.join(' ');
  return [bin, '--stdio', stdio, '--outputTransport', 'streamableHttp', '--stateful', '--port', String(port), '--logLevel', 'none'];
}

/** Starts a peer gateway with its own CLI, configured as its README says, in front of the same stdio backend (Node with START_FLAGS). */
export async function startPeer(kind: Peer): Promise<SystemProcess> {
  const port = await freePort();
  const child = tracked(spawn(NODE, [...START_FLAGS, ...peerArgv(kind, port)], { stdio: 'ignore', detached: true }));
  const url = `http://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + START_MS;
  for (;;) {
    const client = await v1Client(url).catch(() => undefined);
    if (client) {
      await client.close();
      break;
    }
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`${kind} did not come up`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}

/** Spawns a process that prints `URL <url>` once it listens, and waits for that line. */
export async function startUrlProcess(argv: readonly string[]): Promise<SystemProcess> {
  const child = tracked(spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'ignore'], detached: true }));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${argv.join(' ')} did not start`)), START_MS);
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('URL ')) {
        clearTimeout(t);
        resolve(l.slice(4));
      }
    });
  }).catch(async (e: unknown) => {
    await stopChild(child);
    throw e;
  });
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}
