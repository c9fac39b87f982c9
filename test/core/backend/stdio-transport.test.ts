/**
 * The stdio transport ends a backend's whole process tree: a wrapper (as `npx` is) and the server it
 * started as a grandchild, with SIGKILL for a server that ignores SIGTERM; close() returns only when
 * both are gone; a wrapper that exits on its own closes the transport and takes its server with it;
 * a server reads what was sent before its stdin ended, and may exit by itself before any signal.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Logger } from '../../../src/log.js';
import { ProcessGroupTransport } from '../../../src/core/backend/stdio-transport.js';
import { nodeArgs } from '../../helpers/built.js';
import { until } from '../../helpers/until.js';
import { WRAPPER, isLive, killRecorded, pidFile, startsIn } from '../../helpers/process-tree.js';

const files: string[] = [];
afterEach(() => files.splice(0).forEach(killRecorded));

function recordingLogger(lines: { level: string; msg: string }[]): Logger {
  const at =
    (level: string) =>
    (_obj: object, msg = ''): void => {
      lines.push({ level, msg });
    };
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
  return logger;
}

async function connect(env: Record<string, string> = {}, graceMs?: number) {
  const file = pidFile();
  files.push(file);
  const lines: { level: string; msg: string }[] = [];
  const transport = new ProcessGroupTransport(
    { command: process.execPath, args: nodeArgs(WRAPPER), env: { WRAPPER_PID_FILE: file, ...env } },
    recordingLogger(lines),
    graceMs,
  );
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  const pid = await client.callTool({ name: 'pid' });
  const server = Number((pid.content as { text: string }[])[0]!.text);
  const [start] = startsIn(file);
  expect(start?.server).toBe(server);
  return { client, transport, lines, wrapper: start!.wrapper, server };
}

describe('ProcessGroupTransport', () => {
  it('says the backend is busy while what was sent to it in this turn has not been written yet', async () => {
    const { client, transport } = await connect();
    await until('the server sleeps', () => transport.activity() === 'idle');
    await transport.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    expect(transport.activity()).toBe('busy'); // gathered, written when this turn ends
    await client.close();
  });

  it('ends the wrapper and the server it started when closed, and returns only when both are gone', async () => {
    const { client, wrapper, server } = await connect();
    expect(isLive(wrapper) && isLive(server)).toBe(true);
    await client.close();
    expect([wrapper, server].filter(isLive)).toEqual([]);
  });

  it('kills (SIGKILL) a process group that outlives SIGTERM after the grace period, and says so', async () => {
    const { client, lines, wrapper, server } = await connect({ LINGER_IGNORE_SIGTERM: '1' }, 300);
    await client.close();
    expect([wrapper, server].filter(isLive)).toEqual([]);
    expect(lines).toContainEqual({ level: 'warn', msg: 'backend process group outlived SIGTERM: killed (SIGKILL)' });
  });

  it('closes when the started process exits on its own, and ends what it left running in its group', async () => {
    const { transport, lines, wrapper, server } = await connect();
    const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
    process.kill(wrapper, 'SIGKILL');
    await closed;
    expect(isLive(server)).toBe(false);
    expect(lines).toContainEqual({ level: 'info', msg: 'backend process exited and left processes in its group: ended them (SIGTERM)' });
    await transport.close(); // idempotent
  });

  it('ends stdin first and lets the process exit by itself, having read what was sent before the end (no SIGTERM)', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'eof-')), 'read');
    // A server that acts on its input only once it ends, a little later (as one saving its state would).
    const script = `let got = ''; process.stdin.on('data', (d) => (got += d)); process.stdin.on('end', () => setTimeout(() => require('fs').writeFileSync(${JSON.stringify(out)}, got), 200));`;
    const lines: { level: string; msg: string }[] = [];
    const transport = new ProcessGroupTransport({ command: process.execPath, args: ['-e', script] }, recordingLogger(lines), 10_000);
    await transport.start();
    await transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'gone' } });
    await transport.close();
    expect(readFileSync(out, 'utf8')).toContain('"notifications/cancelled"');
    expect(lines.filter((l) => l.level !== 'debug')).toEqual([]);
  });

  it('rejects start() for a command that does not exist, and closes cleanly', async () => {
    const transport = new ProcessGroupTransport({ command: '/nonexistent/server' }, recordingLogger([]));
    await expect(transport.start()).rejects.toThrow(/ENOENT/);
    await transport.close();
    await expect(transport.send({ jsonrpc: '2.0', method: 'ping', id: 1 })).rejects.toThrow('Not connected');
  });

  it('names a cwd that does not exist, where Node names the command (spawn node ENOENT)', async () => {
    const transport = new ProcessGroupTransport({ command: process.execPath, args: ['-e', ''], cwd: '/nonexistent-dir' }, recordingLogger([]));
    await expect(transport.start()).rejects.toThrow(/^cwd \/nonexistent-dir does not exist \(spawn .* ENOENT\)$/);
    await transport.close();
  });
});
