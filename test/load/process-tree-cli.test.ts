/**
 * The real CLI (`src/main.ts` under tsx) with an npx-like wrapped stdio server as its backend: SIGTERM
 * drains and exits, a second SIGTERM closes at once, SIGKILL leaves the backends to the group reaper,
 * and none leaves a process of a backend behind.
 * In `npm run test:load`: each test starts the CLI and two tsx processes per session.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeArgs } from '../helpers/built.js';
import { isLive, killRecorded, pidFile, recordedPids, serverPid, until, wrappedServer } from '../helpers/process-tree.js';
import { post } from '../helpers/wire.js';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const ELICIT = { elicitation: {} };

const files: string[] = [];
afterEach(() => files.splice(0).forEach(killRecorded));

/**
 * The real CLI with the wrapped server as its backend, listening, with a call session used and a call
 * parked (it holds the drain until its deadline).
 */
async function startCli(drainTimeoutMs: number) {
  const file = pidFile();
  files.push(file);
  const config = join(mkdtempSync(join(tmpdir(), 'tree-cli-')), 'gateway.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { tree: wrappedServer(file) }, gateway: { drainTimeoutMs } }));
  const child = spawn(process.execPath, [...nodeArgs(MAIN), '--config', config, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const cli = {
    child,
    file,
    stderr: () => stderr,
    /** The exit code, or 'running' if it has not exited within `ms`. */
    exitWithin: (ms: number) => Promise.race([exited, new Promise<'running'>((r) => setTimeout(() => r('running'), ms).unref())]),
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
  try {
    await until('the CLI to listen with its backend connected', () => /"url":"http:/.test(stderr) && /backend connected/.test(stderr));
    const url = /"url":"(http:[^"]+)"/.exec(stderr)![1]!;
    await serverPid(url);
    const parked = await post(url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    expect(parked.message['result']).toMatchObject({ resultType: 'input_required' });
    expect(recordedPids(file).length).toBeGreaterThanOrEqual(4);
  } catch (e) {
    await cli.kill();
    throw e;
  }
  return cli;
}

describe('the CLI with a wrapped stdio backend', () => {
  it('exits on SIGTERM at drainTimeoutMs although a call is parked, leaving no process of a backend behind (CLI)', async () => {
    const drainTimeoutMs = 1_000;
    const cli = await startCli(drainTimeoutMs);
    try {
      cli.child.kill('SIGTERM');
      // The parked call would hold a drain without a deadline for its lifetime (minutes): an exit
      // within 20 s is drainTimeoutMs at work, generous for a loaded machine (how close to 1 s is for
      // `npm run bench`).
      expect(await cli.exitWithin(20_000)).toBe(0);
      expect(cli.stderr()).toMatch(/drained: closed/);
      expect(recordedPids(cli.file).filter(isLive)).toEqual([]);
    } finally {
      await cli.kill();
    }
  }, 60_000); // starting the CLI and two tsx processes per session takes a while on a loaded machine

  it('killed outright (SIGKILL) with a call parked, leaves no process of a backend behind: the reaper ends them (CLI)', async () => {
    const cli = await startCli(600_000);
    await cli.kill();
    // The wrapped server keeps running after its stdin ends (linger.ts) and waits on its elicitation;
    // the gateway runs no code of its own now: the reaper ends the group (its grace, then SIGTERM).
    await until('the reaper to end the backend processes', () => recordedPids(cli.file).filter(isLive).length === 0, 20_000);
  }, 60_000);

  it('closes at once on a second SIGTERM, without waiting out the drain, leaving no process behind (CLI)', async () => {
    const cli = await startCli(600_000);
    try {
      cli.child.kill('SIGTERM');
      await until('the CLI to drain', () => /draining/.test(cli.stderr()));
      cli.child.kill('SIGTERM');
      expect(await cli.exitWithin(20_000)).toBe(0); // the drain would take 600 s: generous, for a loaded machine
      expect(cli.stderr()).toMatch(/second stop signal: closing now/);
      expect(recordedPids(cli.file).filter(isLive)).toEqual([]);
    } finally {
      await cli.kill();
    }
  }, 60_000);
});
