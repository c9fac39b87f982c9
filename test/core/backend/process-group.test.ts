/**
 * Process groups with real processes: a group whose only process left is a zombie (exited, and
 * nobody reaped it) counts as gone; a group that ignores SIGTERM is killed after the grace.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { endProcessGroup, groupAlive } from '../../../src/core/backend/process-group.js';
import { isLive, until } from '../../helpers/process-tree.js';

/** `sh -c script` leading a group of its own; resolves once it prints its first line (a pid). */
async function group(script: string): Promise<{ pgid: number; printed: number }> {
  const child = spawn('sh', ['-c', script], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  const printed = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  child.stdout.destroy();
  child.unref();
  return { pgid: child.pid!, printed };
}

describe('process groups', () => {
  it.skipIf(process.platform !== 'linux')('counts a group whose only process left is a zombie (exited, never reaped) as gone', async () => {
    // `setsid sleep 0.2` leads a group of its own; its parent then becomes `sleep 30`, which never
    // reaps it: once it exits it stays a zombie in that group (as an orphan does under a PID 1 that
    // never reaps), and kill(-pgid, 0) still finds the group.
    const parent = spawn('sh', ['-c', 'setsid sleep 0.2 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pgid = await new Promise<number>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
      await until('the process group to exit', () => !isLive(pgid));
      expect(() => process.kill(-pgid, 0)).not.toThrow(); // the zombie is still there
      expect(await groupAlive(pgid)).toBe(false);
      expect(await endProcessGroup(pgid)).toBe('exited');
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('ends a group with SIGTERM, and with SIGKILL when it outlives the grace period', async () => {
    const polite = await group('sleep 30 & echo $!; wait');
    expect(await endProcessGroup(polite.pgid, 5_000)).toBe('terminated');
    expect(isLive(polite.printed)).toBe(false);
    const stubborn = await group('trap "" TERM; sleep 30 & echo $!; wait');
    expect(await endProcessGroup(stubborn.pgid, 200)).toBe('killed');
    expect(isLive(stubborn.printed)).toBe(false);
  });
});
