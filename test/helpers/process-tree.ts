/**
 * Process trees in tests: the npx-like wrapper fixture (it starts the legacy fixture server as a
 * grandchild and records both pids in a file), a liveness check that counts zombies as gone (an orphan
 * that exits under a PID 1 that never reaps stays a zombie), and a cleanup that kills what is left.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeArgs } from './built.js';
import { firstText } from './gateway.js';
import { post } from './wire.js';

export const WRAPPER = fileURLToPath(new URL('../fixtures/npx-like-wrapper.ts', import.meta.url));

/** A fresh file for the wrapper's pid lines. */
export function pidFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'tree-')), 'pids');
}

/** An `mcpServers` stdio entry that runs the legacy fixture behind the npx-like wrapper. */
export function wrappedServer(file: string, env: Record<string, string> = {}): Record<string, unknown> {
  return { command: process.execPath, args: nodeArgs(WRAPPER), env: { WRAPPER_PID_FILE: file, ...env } };
}

/** Every start the wrapper recorded: its own pid and its server's. */
export function startsIn(file: string): { wrapper: number; server: number }[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [wrapper, server] = line.split(' ').map(Number);
      return { wrapper: wrapper!, server: server! };
    });
}

/** True while `pid` runs (a zombie does not). */
export function isLive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/** The shared condition wait (./until.ts), also importable from here. */
export { until } from './until.js';

/** Kills every process the wrapper recorded in `file` (cleanup when a test failed half-way). */
export function killRecorded(file: string): void {
  for (const s of startsIn(file)) {
    for (const pid of [s.wrapper, s.server]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
}

/** Every pid the wrapper recorded in `file`: each wrapper and the server it started. */
export function recordedPids(file: string): number[] {
  return startsIn(file).flatMap((s) => [s.wrapper, s.server]);
}

/** The pid of the fixture server behind the gateway at `url` (its `pid` tool). */
export async function serverPid(url: string): Promise<number> {
  const r = await post(url, 'tools/call', { name: 'pid' }, { caps: { elicitation: {} } });
  return Number(firstText(r.message['result'] as { content?: unknown }));
}
