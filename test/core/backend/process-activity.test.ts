/**
 * A stdio backend's activity from /proc (Linux): busy while any thread of it, or of a process it
 * started, runs or waits for a CPU; idle once every one sleeps; unknown for a process that is gone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessWatch, canSeeProcessActivity, keptProcessFiles, parseStat } from '../../../src/core/backend/process-activity.js';
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
/** Computes for a minute (bounded, so that a failed run cannot leave it spinning); the tests are over long before. */
const SPIN = 'for (const end = Date.now() + 60_000; Date.now() < end; ) {}';
const SPINNER = ['-e', SPIN];

/** A process's CPU time so far, in clock ticks (proc(5) fields 14 and 15); 0 once it is gone. */
function cpuTicks(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The pids of a process tree, its root first (from each process's children file). */
function tree(root: number): number[] {
  const pids = [root];
  for (let i = 0; i < pids.length; i++) {
    try {
      for (const s of readFileSync(`/proc/${pids[i]}/task/${pids[i]}/children`, 'latin1').split(' ')) if (s.trim()) pids.push(Number(s));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Waits until a process of the tree has spent more CPU than a Node process's start-up takes (~50 ms):
 * it is in its computing loop then, and runs or waits for a CPU at every look from now on. A first
 * "busy" is not that barrier: a shell handling its trap, a forked child before its exec or a server
 * starting up is busy for a moment and may sleep again before the loop begins.
 */
async function untilSpinning(root: number, before: Map<number, number> = new Map()): Promise<void> {
  const spent = (pid: number): number => cpuTicks(pid) - (before.get(pid) ?? 0);
  await until('a process of the tree to be in its computing loop', () => tree(root).some((pid) => spent(pid) >= 30));
}

/** Each process of a tree's CPU time so far (`untilSpinning`'s baseline for a server already started). */
const ticksOf = (root: number): Map<number, number> => new Map(tree(root).map((pid) => [pid, cpuTicks(pid)]));

/** A new watch's first look (every file opened, read and closed). */
function firstLook(pid: number): ReturnType<ProcessWatch['activity']> {
  const watch = new ProcessWatch(pid);
  try {
    return watch.activity();
  } finally {
    watch.close();
  }
}

describe.runIf(canSeeProcessActivity)("a watch's first look (Linux /proc)", () => {
  it('is idle once a started server waits for input in every thread, busy while one computes', async () => {
    const sleeper = await start(process.execPath, SLEEPER);
    await until('the sleeper to be idle', () => firstLook(sleeper.pid) === 'idle');
    const spinner = await start(process.execPath, SPINNER);
    await untilSpinning(spinner.pid);
    // A spinning process never sleeps: busy at every look.
    for (let i = 0; i < 20; i++) expect(firstLook(spinner.pid)).toBe('busy');
  });

  it("sees through a wrapper: the shell sleeps while its child computes (a wrapper's server)", async () => {
    const wrapper = await start('/bin/sh', ['-c', `"${process.execPath}" -e '${SPIN}'; exit 0`]);
    await untilSpinning(wrapper.pid);
    for (let i = 0; i < 20; i++) expect(firstLook(wrapper.pid)).toBe('busy');
  });

  it('is unknown for a process that is gone', async () => {
    const child = await start(process.execPath, ['-e', '']);
    await new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())));
    expect(firstLook(child.pid)).toBe('unknown');
  });
});

/** The state letter of a process's main thread. */
const mainThreadState = (pid: number): string => {
  const line = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'latin1');
  return line[line.lastIndexOf(')') + 2]!;
};

/** How many files this process has open. */
const openFiles = (): number => readdirSync('/proc/self/fd').length;

/**
 * A server that sleeps until SIGUSR1, then computes: on its main thread, or in a worker thread started
 * then. Resolves once its handler is in place (it says so on stdout): before that, SIGUSR1 would start
 * Node's inspector instead.
 */
async function startWaitingServer(where: 'main' | 'worker' | 'swap'): Promise<ChildProcess & { pid: number }> {
  const worker = (body: string): string => `new (require('node:worker_threads').Worker)('${body}', { eval: true })`;
  // `swap`: a sleeping worker thread until the signal, then a computing one in its place (one thread out, one in).
  const code =
    where === 'swap'
      ? `let w = ${worker('setTimeout(() => {}, 60_000)')}; process.on('SIGUSR1', () => w.terminate().then(() => { w = ${worker(SPIN)}; })); setTimeout(() => process.exit(0), 60_000); w.on('online', () => process.stdout.write('ready\\n'))`
      : `process.on('SIGUSR1', () => { ${where === 'main' ? SPIN : worker(SPIN)} }); setTimeout(() => process.exit(0), 60_000); process.stdout.write('ready\\n')`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', () => resolve());
  });
  return child as ChildProcess & { pid: number };
}

describe('parseStat', () => {
  it("reads the state and the thread count after the command's name, whatever it holds", () => {
    const line =
      '4242 (a (b) c) S 1 4242 4242 0 -1 4194560 900 0 0 0 12 3 0 0 20 0 7 0 5000 1000000 2000 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0';
    expect(parseStat(line)).toEqual({ letter: 'S'.charCodeAt(0), threads: 7 });
  });

  it.runIf(canSeeProcessActivity)("reads this process's own thread count as /proc lists its threads", async () => {
    // Polled: a thread may start between the two reads.
    const agree = (): boolean => parseStat(readFileSync('/proc/self/stat', 'latin1')).threads === readdirSync('/proc/self/task').length;
    await until('the stat line and the task list to agree on the thread count', agree, 5_000);
  });
});

describe.runIf(canSeeProcessActivity)('ProcessWatch (files kept open between looks)', () => {
  const watches: ProcessWatch[] = [];
  afterEach(() => void watches.splice(0).forEach((w) => w.close()));
  const watch = (pid: number, opts?: { maxKeptFiles?: number }): ProcessWatch => {
    const w = new ProcessWatch(pid, opts);
    watches.push(w);
    return w;
  };

  /** A waiting server (`startWaitingServer`) and its watch, seen idle, then told to compute, and computing. */
  const computing = async (where: 'main' | 'worker'): Promise<{ server: ChildProcess & { pid: number }; w: ProcessWatch }> => {
    const server = await startWaitingServer(where);
    const w = watch(server.pid);
    await until('the server to be idle', () => w.activity() === 'idle');
    const before = ticksOf(server.pid);
    server.kill('SIGUSR1');
    await untilSpinning(server.pid, before);
    return { server, w };
  };

  it('sees the same process go from idle to busy', async () => {
    const { w } = await computing('main');
    for (let i = 0; i < 20; i++) expect(w.activity()).toBe('busy');
  });

  it('sees a thread started after the first look (the thread list is read again when the count changes)', async () => {
    const server = await startWaitingServer('worker');
    const w = watch(server.pid);
    await until('the server to be idle', () => w.activity() === 'idle');
    const threads = readdirSync(`/proc/${server.pid}/task`).length;
    const before = ticksOf(server.pid);
    server.kill('SIGUSR1');
    // Once the main thread has started the worker and sleeps again, only the new thread computes.
    await untilSpinning(server.pid, before);
    await until(
      'the worker to run and the main thread to sleep',
      () => readdirSync(`/proc/${server.pid}/task`).length > threads && mainThreadState(server.pid) === 'S',
    );
    for (let i = 0; i < 20; i++) expect(w.activity()).toBe('busy');
  });

  it("in main scope reads each process's main thread only: busy while it computes, idle while only another thread does", async () => {
    const { w: m } = await computing('main');
    for (let i = 0; i < 20; i++) expect(m.activity('main')).toBe('busy');

    const { server: worker, w } = await computing('worker');
    // Its main thread asleep (a wake-up of its own may come between two reads of /proc: waited for, not raced).
    await until('the main thread to be seen asleep in main scope', () => mainThreadState(worker.pid) === 'S' && w.activity('main') === 'idle');
    expect(w.activity()).toBe('busy');
  });

  it('in main scope looks at the whole tree first when nothing of it was seen yet, and sees through a wrapper', async () => {
    const wrapper = await start('/bin/sh', ['-c', `"${process.execPath}" -e '${SPIN}'; exit 0`]);
    await untilSpinning(wrapper.pid);
    const w = watch(wrapper.pid);
    // Its first look finds the server under the shell; the next reads the shell's and the server's main threads.
    for (let i = 0; i < 20; i++) expect(w.activity('main')).toBe('busy');
  });

  it('in main scope looks whole again after a look that stopped at a busy thread before it listed the children', async () => {
    // A worker thread computes for a while (the root says when it is gone), a child process for the whole test.
    const worker = `new (require('node:worker_threads').Worker)('for (const end = Date.now() + 400; Date.now() < end; ) {}', { eval: true }).on('exit', () => process.stdout.write('done\\n'))`;
    const child = `require('node:child_process').spawn(process.execPath, ['-e', '${SPIN}'], { stdio: 'ignore' })`;
    const root = spawn(process.execPath, ['-e', `${worker}; ${child}; setTimeout(() => {}, 60_000)`], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    started.push(root);
    const workerDone = new Promise<void>((resolve) => root.stdout!.once('data', () => resolve()));
    await until('the child to be started', () => tree(root.pid!).length > 1);
    const w = watch(root.pid!);
    // The first look stops at the root's busy worker thread, before the root's children are read.
    expect(w.activity('main')).toBe('busy');
    await workerDone;
    await until('the root to sleep', () => mainThreadState(root.pid!) === 'S');
    await untilSpinning(root.pid!);
    // What the root's main thread says (asleep) is not the tree: the child computes.
    for (let i = 0; i < 20; i++) expect(w.activity('main')).toBe('busy');
  });

  it('in main scope looks whole every few looks: a process the tree started since is seen', async () => {
    const server = await start(process.execPath, [
      '-e',
      `process.on('SIGUSR1', () => require('node:child_process').spawn(process.execPath, ['-e', '${SPIN}'], { stdio: 'ignore' })); setTimeout(() => {}, 60_000); process.kill(process.pid, 'SIGSTOP')`,
    ]);
    // Stopped until its handler is in place (SIGUSR1 before it would start the inspector); then let go.
    await until('the server to stop itself', () => mainThreadState(server.pid) === 'T');
    server.kill('SIGCONT');
    const w = watch(server.pid);
    await until('the server to be idle', () => w.activity() === 'idle' && w.activity('main') === 'idle');
    const before = ticksOf(server.pid);
    server.kill('SIGUSR1');
    await until(
      'its child to compute',
      () => tree(server.pid).length > 1 && tree(server.pid).some((pid) => pid !== server.pid && cpuTicks(pid) - (before.get(pid) ?? 0) >= 30),
    );
    await until('the server itself to sleep again', () => mainThreadState(server.pid) === 'S');
    const looks: string[] = [];
    for (let i = 0; i < 8; i++) looks.push(w.activity('main'));
    expect(looks).toContain('busy');
  });

  it('sees a thread that took the place of one that exited (its file is let go, the list read again)', async () => {
    const server = await startWaitingServer('swap');
    const w = watch(server.pid);
    await until('the server and its sleeping worker to be idle', () => w.activity() === 'idle');
    const threads = readdirSync(`/proc/${server.pid}/task`).length;
    const held = keptProcessFiles();
    const before = ticksOf(server.pid);
    server.kill('SIGUSR1');
    await untilSpinning(server.pid, before);
    // The sleeping worker's thread ends and the computing one's starts: the count comes back to what it was.
    await until(
      'the new worker to run and the main thread to sleep',
      () => readdirSync(`/proc/${server.pid}/task`).length === threads && mainThreadState(server.pid) === 'S' && w.activity() === 'busy',
    );
    for (let i = 0; i < 20; i++) expect(w.activity()).toBe('busy');
    expect(keptProcessFiles()).toBe(held);
  });

  it('keeps no more files open over many looks, lets every one go on close, and is unknown once the process is gone', async () => {
    const baseline = keptProcessFiles();
    const server = await start(process.execPath, SLEEPER);
    const w = watch(server.pid);
    await until('the server to be idle', () => w.activity() === 'idle');
    const held = keptProcessFiles() - baseline;
    expect(held).toBeGreaterThan(2); // its stat, its children, its threads' stats
    // Counted by the descriptors this process has open, with nothing else going on between two counts.
    const watching = openFiles();
    for (let i = 0; i < 200; i++) w.activity();
    expect(openFiles()).toBe(watching);
    expect(keptProcessFiles() - baseline).toBe(held);
    server.kill('SIGKILL');
    await until('the server to be gone', () => w.activity() === 'unknown');
    expect(keptProcessFiles()).toBe(baseline);
    const beforeClose = openFiles();
    w.close();
    expect(openFiles()).toBe(beforeClose);
    expect(w.activity()).toBe('unknown');
  });

  it('lets go of its files after each look while all watches together hold more than their limit, and still sees', async () => {
    const before = keptProcessFiles();
    const server = await startWaitingServer('main');
    const kept = watch(server.pid);
    await until('the server to be idle', () => kept.activity() === 'idle');
    expect(keptProcessFiles()).toBeGreaterThan(before);
    const holding = keptProcessFiles();
    // Any file kept is over a limit of 0: this watch opens and closes its files at every look.
    const lean = watch(server.pid, { maxKeptFiles: 0 });
    expect(lean.activity()).toBe('idle');
    expect(keptProcessFiles()).toBe(holding);
    const ticks = ticksOf(server.pid);
    server.kill('SIGUSR1');
    await untilSpinning(server.pid, ticks);
    expect(lean.activity()).toBe('busy');
    expect(keptProcessFiles()).toBe(holding);
    expect(kept.activity()).toBe('busy');
    kept.close();
    expect(keptProcessFiles()).toBe(before);
  });

  it('sees through a wrapper whose server starts after the first look', async () => {
    // The shell waits on a sleeper until SIGUSR1, then runs a computing server as its child.
    const script = `trap '"${process.execPath}" -e "${SPIN}"' USR1; sleep 60 & wait $!`;
    const wrapper = await start('/bin/sh', ['-c', script]);
    const w = watch(wrapper.pid);
    await until('the wrapper and its sleeper to be idle', () => w.activity() === 'idle');
    wrapper.kill('SIGUSR1');
    await untilSpinning(wrapper.pid);
    for (let i = 0; i < 20; i++) expect(w.activity()).toBe('busy');
  });
});
