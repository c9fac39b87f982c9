/**
 * A cluster of gateway processes (`src/main.ts` under tsx), so that an instance's exit, a SIGKILL or a
 * SIGSTOP is real: three by default, on one Redis and one HTTP backend process, each on a free port
 * that is also its internal URL, all with the same requestState keys and cluster secret.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { nodeArgs } from './built.js';
import { freePort, startHttpBackendProcess } from './processes.js';
import { until } from './until.js';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface ProcessClusterOptions {
  readonly redisUrl: string;
  readonly keyPrefix: string;
  /** More of each `gateway` section (port, coalesceMs: 0, high parked bounds and `cluster` are set here). */
  readonly gateway?: Record<string, unknown>;
  readonly instances?: number;
  readonly heartbeatMs?: number;
  /** pino level of the instances (default warn). */
  readonly logLevel?: string;
  /** Each stderr line of instance `i` (default: passed to the test's stderr). */
  readonly onLine?: (i: number, line: string) => void;
}

export interface ProcessCluster {
  /** Each instance's `/mcp` URL. */
  readonly urls: string[];
  readonly children: ChildProcess[];
  /** Which instances are still running. */
  alive(): boolean[];
  /** SIGTERM to every process left (SIGKILL after 10 s), the backend included. */
  stop(): Promise<void>;
}

/** The shared condition wait (./until.ts), also importable from here. */
export { until } from './until.js';

/** Starts the backend and the instances, and returns once every instance answers `/readyz`. */
export async function startProcessCluster(opts: ProcessClusterOptions): Promise<ProcessCluster> {
  const backend = await startHttpBackendProcess();
  const dir = mkdtempSync(join(tmpdir(), 'process-cluster-'));
  const env = {
    ...process.env,
    MCP_GATEWAY_STATE_KEYS: randomBytes(32).toString('base64url'),
    MCP_GATEWAY_CLUSTER_SECRET: randomBytes(24).toString('base64url'),
    LOG_LEVEL: opts.logLevel ?? 'warn',
  };
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  for (let i = 0; i < (opts.instances ?? 3); i++) {
    const port = await freePort();
    ports.push(port);
    const config = join(dir, `n${i}.json`);
    const cluster = {
      redis: opts.redisUrl,
      keyPrefix: opts.keyPrefix,
      instanceId: `n${i}`,
      heartbeatMs: opts.heartbeatMs ?? 150,
      internalUrl: `http://127.0.0.1:${port}`,
    };
    const gateway = { port, coalesceMs: 0, maxParkedPerPrincipal: 4096, maxParkedTotal: 4096, ...opts.gateway, cluster };
    writeFileSync(config, JSON.stringify({ mcpServers: { web: { url: backend.url } }, gateway }));
    const child = spawn(process.execPath, [...nodeArgs(MAIN), '--config', config], {
      env,
      stdio: ['ignore', 'ignore', opts.onLine ? 'pipe' : 'inherit'],
    });
    const { onLine } = opts;
    if (onLine) createInterface({ input: child.stderr! }).on('line', (line) => onLine(i, line));
    children.push(child);
  }
  const urls = ports.map((p) => `http://127.0.0.1:${p}/mcp`);
  const running = (c: ChildProcess): boolean => c.exitCode === null && c.signalCode === null;
  const stop = async (): Promise<void> => {
    for (const c of [...children, backend.child]) {
      if (!running(c)) continue;
      c.kill('SIGTERM');
      await new Promise((r) => {
        const t = setTimeout(() => (c.kill('SIGKILL'), r(undefined)), 10_000);
        c.once('exit', () => (clearTimeout(t), r(undefined)));
      });
    }
  };
  try {
    await Promise.all(
      urls.map((u) =>
        until(`${u} to be ready`, () =>
          fetch(new URL('/readyz', u)).then(
            (r) => r.ok,
            () => false,
          ),
        ),
      ),
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { urls, children, alive: () => children.map(running), stop };
}
