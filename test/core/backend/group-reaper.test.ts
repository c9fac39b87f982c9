/**
 * The group reaper (src/core/backend/group-reaper.ts) with real processes: a process killed outright
 * (SIGKILL) after listing a group leaves it to the reaper, which ends it (SIGTERM, or SIGKILL for one
 * that ignores SIGTERM); a group released is left alone, and the reaper exits with the last one.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { GroupReaper } from '../../../src/core/backend/group-reaper.js';
import { silentLogger, type Logger } from '../../../src/log.js';
import { nodeArgs } from '../../helpers/built.js';
import { until } from '../../helpers/until.js';

const HOST = fileURLToPath(new URL('../../fixtures/reaper-host.ts', import.meta.url));
const posix = process.platform !== 'win32';

/** Groups a test started, killed at its end whatever happened. */
const groups: number[] = [];
afterEach(() => {
  for (const pgid of groups.splice(0)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/** True while group `pgid` has a process that is not a zombie (Linux: /proc; elsewhere kill(0)). */
function groupLive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  if (process.platform !== 'linux') return true;
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .some((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(pgrp) === pgid && state !== 'Z';
      } catch {
        return false;
      }
    });
}

/** The reaper processes this process started that still run (their command line names them). */
function reapersOfThisProcess(): number[] {
  if (process.platform !== 'linux') return [];
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(ppid) === process.pid && state !== 'Z' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('mcp-gateway-reaper');
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Starts the host fixture; resolves with it and the group it listed. */
async function startHost(env: Record<string, string>) {
  const host = spawn(process.execPath, nodeArgs(HOST), { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, ...env } });
  const exited = new Promise((r) => host.once('exit', r));
  const pgid = await new Promise<number>((resolve, reject) => {
    createInterface({ input: host.stdout }).once('line', (line) => resolve(Number(line)));
    host.once('exit', () => reject(new Error('the host exited before it listed its group')));
  });
  groups.push(pgid);
  return { host, pgid, exited };
}

describe.runIf(posix)('the group reaper', () => {
  it('ends a group whose lister was killed outright (SIGKILL): SIGTERM after the grace', async () => {
    const { host, pgid, exited } = await startHost({ REAPER_GRACE_MS: '200' });
    expect(groupLive(pgid)).toBe(true);
    host.kill('SIGKILL');
    await exited;
    await until('the group to be ended by the reaper', () => !groupLive(pgid), 20_000);
  }, 30_000);

  it('ends with SIGKILL a group that ignores SIGTERM', async () => {
    const { host, pgid, exited } = await startHost({ REAPER_GRACE_MS: '200', REAPER_IGNORE_SIGTERM: '1' });
    host.kill('SIGKILL');
    await exited;
    await until('the group to be killed by the reaper', () => !groupLive(pgid), 20_000);
  }, 30_000);

  it('leaves a released group alone, and exits with the last group released', async () => {
    const reaper = new GroupReaper(200);
    const started = [0, 1].map(() => spawn(process.execPath, ['-e', 'setInterval(() => undefined, 60_000)'], { detached: true, stdio: 'ignore' }));
    const pgids = started.map((child) => child.pid!);
    groups.push(...pgids);
    for (const pgid of pgids) reaper.watch(pgid, silentLogger);
    expect(reaper.size).toBe(2);
    if (process.platform === 'linux') await until('the reaper to run', () => reapersOfThisProcess().length === 1);
    await reaper.release(pgids[0]!);
    expect(reapersOfThisProcess().length).toBe(process.platform === 'linux' ? 1 : 0); // one group still listed
    await reaper.release(pgids[1]!);
    expect(reaper.size).toBe(0);
    expect(reapersOfThisProcess()).toEqual([]); // release() resolved once it had exited
    // Released groups are the gateway's own business: the reaper, gone, ended neither.
    expect(pgids.map(groupLive)).toEqual([true, true]);
  });

  it.runIf(process.platform === 'linux')('starts another reaper, told of every group, when one is killed by hand', async () => {
    const reaper = new GroupReaper(200);
    const child = spawn(process.execPath, ['-e', 'setInterval(() => undefined, 60_000)'], { detached: true, stdio: 'ignore' });
    groups.push(child.pid!);
    reaper.watch(child.pid!, silentLogger);
    await until('the reaper to run', () => reapersOfThisProcess().length === 1);
    const [first] = reapersOfThisProcess();
    process.kill(first!, 'SIGKILL');
    await until('another reaper to run', () => reapersOfThisProcess().some((pid) => pid !== first), 10_000);
    await reaper.release(child.pid!);
    expect(reapersOfThisProcess()).toEqual([]);
    expect(groupLive(child.pid!)).toBe(true);
  });

  it('without a shell, warns once and lists nothing (the gateway runs on)', async () => {
    const warnings: string[] = [];
    const log: Logger = { ...silentLogger, warn: (_fields, message) => void warnings.push(String(message)) };
    const reaper = new GroupReaper(200, '/nonexistent/sh');
    reaper.watch(4_000_001, log);
    await until('the failed start to be seen', () => warnings.length > 0);
    reaper.watch(4_000_002, log);
    expect(reaper.size).toBe(0);
    expect(warnings).toEqual(['cannot start the process-group reaper: a gateway killed outright leaves its backends running']);
  });
});
