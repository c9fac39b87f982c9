/**
 * Ending a stdio backend's whole process tree (POSIX). The backend's process is started as the leader
 * of a process group of its own, so the `npx` / `uvx` / shell wrapper and the server it starts as a
 * child (which the wrapper may not pass signals on to) are ended together: SIGTERM to the group, then
 * SIGKILL to the group after a grace period, and the group counts as gone when no live process is left
 * in it.
 *
 * A process that has exited but that nobody has reaped (a zombie) is not live: an orphaned server is
 * re-parented to PID 1, and a container's PID 1 often never reaps, so its zombie would otherwise keep
 * the group "alive" for ever. On Linux zombies are told apart through /proc; elsewhere (macOS, where
 * launchd reaps) `kill(-pgid, 0)` alone decides.
 */
import { readFile, readdir } from 'node:fs/promises';
import { sleep } from '../../util/abort.js';

/** How long a backend's process group has between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2_000;
/** How long a group may take to disappear after SIGKILL before it is given up on (logged). */
export const KILL_WAIT_MS = 2_000;
/** How often the group is looked at while it is being ended. */
const POLL_MS = 50;

/** How a group ended: on its own, after SIGTERM, after SIGKILL, or not at all (processes left). */
export type GroupEnd = 'exited' | 'terminated' | 'killed' | 'survived';

/** Sends `signal` to every process in group `pgid`. False when no process is left in it. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (e) {
    // EPERM: a member runs as another user (a setuid helper); it is there, but cannot be signalled.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True while group `pgid` has a process that has not exited (zombies do not count, see above). */
export async function groupAlive(pgid: number): Promise<boolean> {
  if (!signalGroup(pgid, 0)) return false;
  if (process.platform !== 'linux') return true;
  const live = await livePgids();
  if (live === undefined || live.has(pgid)) return true;
  // A shared scan may predate the group: "gone" is believed only from a scan begun after kill() found it.
  const fresh = await livePgids(true);
  return fresh === undefined || fresh.has(pgid);
}

/** One /proc scan serves every group being ended at the same moment (a gateway closing many sessions). */
let scan: { at: number; pgids: Promise<Set<number> | undefined> } | undefined;

/** The process groups that have a live (not zombie) process, from /proc (`fresh`: a scan begun now); undefined when it cannot be read. */
function livePgids(fresh = false): Promise<Set<number> | undefined> {
  if (!fresh && scan && Date.now() - scan.at < POLL_MS / 2) return scan.pgids;
  scan = { at: Date.now(), pgids: scanProc() };
  return scan.pgids;
}

async function scanProc(): Promise<Set<number> | undefined> {
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return undefined;
  }
  const live = new Set<number>();
  const stats = await Promise.all(names.filter((n) => /^\d+$/.test(n)).map((n) => readFile(`/proc/${n}/stat`, 'utf8').catch(() => ''))); // '': gone meanwhile
  for (const stat of stats) {
    if (!stat) continue;
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, so read after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state !== 'Z' && state !== 'X') live.add(Number(pgrp));
  }
  return live;
}

/**
 * Ends group `pgid`: SIGTERM to the group, SIGKILL to it if any process is left after `graceMs`, and
 * resolves when none is left, or after `waitMs` more (then `survived`: a process that cannot be killed,
 * such as one stuck in the kernel). Never rejects; its timers keep the process alive while it waits (a
 * close() awaits it), and none outlives it.
 */
export async function endProcessGroup(pgid: number, graceMs = KILL_GRACE_MS, waitMs = KILL_WAIT_MS): Promise<GroupEnd> {
  if (!(await groupAlive(pgid))) return 'exited';
  signalGroup(pgid, 'SIGTERM');
  if (await goneWithin(pgid, graceMs)) return 'terminated';
  signalGroup(pgid, 'SIGKILL');
  return (await goneWithin(pgid, waitMs)) ? 'killed' : 'survived';
}

async function goneWithin(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await groupAlive(pgid))) return true;
    const left = deadline - Date.now();
    if (left <= 0) return false;
    await sleep(Math.min(POLL_MS, left), undefined, true); // held: a close() awaits this
  }
}
