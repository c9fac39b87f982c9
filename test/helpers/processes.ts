/**
 * Backends and ports for tests that need a process of their own: the streamable-HTTP legacy fixture
 * (so a test can kill it, or restart it at the same address), and free ports on 127.0.0.1 (an
 * instance's internal URL must be known before it starts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { nodeArgs } from './built.js';

const HTTP_FIXTURE = fileURLToPath(new URL('../fixtures/legacy-http-process.ts', import.meta.url));

/** Starts the HTTP legacy fixture as its own process (on `port`, else a free one, with `env` added); resolves once it listens. */
export async function startHttpBackendProcess(port = 0, env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, nodeArgs(HTTP_FIXTURE), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env, FIXTURE_PORT: String(port) },
  });
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('backend did not start')), 30_000); // generous: tsx starts slowly on a loaded machine
    lines.on('line', (line) => {
      if (!line.startsWith('URL ')) return;
      clearTimeout(timer);
      resolve(line.slice(4));
    });
  });
  return { child, url };
}

/** A port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
