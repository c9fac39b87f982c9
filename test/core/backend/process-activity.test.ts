/**
 * A stdio backend's activity from /proc (Linux): busy while any thread of it, or of a process it
 * started, runs or waits for a CPU; idle once every one sleeps; unknown for a process that is gone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { canSeeProcessActivity, processActivity } from '../../../src/core/backend/process-activity.js';
import { groupAlive, signalGroup } from '../../../src/core/backend/process-group.js';
import { until } from '../../helpers/until.js';

const started: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(
    started.splice(0).map(async (child) => {
      const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));
      // The whole group: a wrapper's child too.
      signalGroup(child.pid!, 'SIGKILL');
      await exited;
      await until('the process group to be gone', async () => !(await groupAlive(child.pid!)));
    }),
  );
});

/** Starts `command args` as the leader of a process group of its own, and resolves once it runs. */
async function start(command: string, args: string[]): Promise<ChildProcess & { pid: number }> {
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  started.push(child);
  await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child as ChildProcess & { pid: number };
}

const SLEEPER = ['-e', 'setInterval(() => {}, 60_000)'];
const SPINNER = ['-e', 'for (;;) {}'];

describe.runIf(canSeeProcessActivity)('processActivity (Linux /proc)', () => {
  it('is idle once a started server waits for input in every thread, busy while one computes', async () => {
    const sleeper = await start(process.execPath, SLEEPER);
    await until('the sleeper to be idle', () => processActivity(sleeper.pid) === 'idle');
    const spinner = await start(process.execPath, SPINNER);
    // A spinning process never sleeps: busy at every look.
    for (let i = 0; i < 20; i++) expect(processActivity(spinner.pid)).toBe('busy');
  });

  it("sees through a wrapper: the shell sleeps while its child computes (a wrapper's server)", async () => {
    const wrapper = await start('/bin/sh', ['-c', `"${process.execPath}" -e 'for (;;) {}'; exit 0`]);
    await until('the wrapped spinner to have started', () => processActivity(wrapper.pid) === 'busy');
    for (let i = 0; i < 20; i++) expect(processActivity(wrapper.pid)).toBe('busy');
  });

  it('is unknown for a process that is gone', async () => {
    const child = await start(process.execPath, ['-e', '']);
    await new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())));
    expect(processActivity(child.pid)).toBe('unknown');
  });
});
