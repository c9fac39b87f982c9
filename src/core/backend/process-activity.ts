/**
 * Whether a stdio backend's process is still at work (Linux, from /proc): any thread of the started
 * process, or of a process it started (an `npx` / `uvx` / `sh -c` wrapper's server), running, waiting
 * for a CPU, or in an uninterruptible wait (state R or D). A backend that has written the requests it
 * makes together and now waits for their answers sleeps (S) in every thread; one that is between two
 * such writes — preempted on a loaded machine, collecting garbage, serialising the next request — does
 * not. That is the MRTR round's quiet signal for stdio backends (round-waiter.ts): it holds at any
 * load, where a time gap only guesses how late the next request may be.
 *
 * Threads are looked at one by one because a process is busy when any of them is: a main thread
 * waiting on its garbage-collection helpers sleeps while they run, and a Python server writes its
 * output from a worker thread. A thread that wakes another makes it runnable before it sleeps itself,
 * so some thread shows R throughout.
 */
import { closeSync, openSync, readFileSync, readSync, readdirSync } from 'node:fs';
import type { BackendActivity } from './port.js';

const R = 'R'.charCodeAt(0);
const D = 'D'.charCodeAt(0);
/** How many processes of a tree are looked at, at most (a wrapper's chain is short). */
const MAX_PROCESSES = 8;
const stat = Buffer.alloc(1024);

/** True where /proc gives thread states and process children. */
export const canSeeProcessActivity = process.platform === 'linux' && readable(`/proc/self/task/${process.pid}/children`);

/** The activity of process `pid` and the processes it started (about 0.1 ms for a Node server's threads). */
export function processActivity(pid: number): BackendActivity {
  if (!canSeeProcessActivity) return 'unknown';
  const pids = [pid];
  let seen = false;
  for (let i = 0; i < pids.length && i < MAX_PROCESSES; i++) {
    const p = pids[i]!;
    let threads: string[];
    try {
      threads = readdirSync(`/proc/${p}/task`);
    } catch {
      continue; // exited meanwhile
    }
    for (const tid of threads) {
      const state = threadState(`/proc/${p}/task/${tid}/stat`);
      if (state === R || state === D) return 'busy';
      if (state !== undefined) seen = true;
    }
    // Processes are started from the main thread (Node, npm, Python's subprocess in the common case).
    for (const child of readChildren(p)) pids.push(child);
  }
  return seen ? 'idle' : 'unknown';
}

/** The state letter of one thread (its stat file's field after the command name), or undefined. */
function threadState(path: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const n = readSync(fd, stat, 0, stat.length, 0);
    const text = stat.toString('latin1', 0, n);
    return text.charCodeAt(text.lastIndexOf(')') + 2);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function readChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1')
      .split(' ')
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
}

function readable(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}
