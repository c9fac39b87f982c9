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
 *
 * A `ProcessWatch` looks at one backend's tree again and again (about once an MRTR round) and keeps
 * each thread's stat file open: a look is then one positioned read a thread (about 40 µs for a Node
 * server's 11 threads here, against 90 µs when the task directory is listed and every file opened and
 * closed again). The list of threads is read again when the process's thread count changes or a
 * thread's file says it is gone. A look in `main` scope reads each process's main thread only, one
 * read a process (for a backend operation known to ask once: core/calls/ask-patterns.ts).
 */
import { closeSync, openSync, readFileSync, readSync, readdirSync } from 'node:fs';
import type { ActivityScope, BackendActivity } from './port.js';

const R = 'R'.charCodeAt(0);
const D = 'D'.charCodeAt(0);
/** In `main` scope, every this many looks one is whole (a process the tree started since is found, one that left it let go). */
const MAIN_LOOKS_PER_WHOLE = 8;
/** How many processes of a tree are looked at, at most (a wrapper's chain is short). */
const MAX_PROCESSES = 8;
/** A stat line, or a children list, read into (a stat line is ~300 bytes). */
const buffer = Buffer.alloc(4096);
/** A stat line's thread count (proc(5) field 20), counted from its state (field 3), the first after the command's name. */
const THREADS_AFTER_STATE = 17;

/**
 * How many /proc files all watches together keep open, at most (~12 a Node server): past it, a watch
 * lets go of its files after each look and opens them again at the next,
 * so that many stdio backends never take the descriptors sockets and pipes need.
 */
export const MAX_KEPT_FILES = 1024;
/** The /proc files the watches of this process hold open now. */
let keptFiles = 0;

/** How many /proc files the watches hold open now (for tests and diagnostics). */
export const keptProcessFiles = (): number => keptFiles;

/** True where /proc gives thread states and process children. */
export const canSeeProcessActivity = process.platform === 'linux' && readable(`/proc/self/task/${process.pid}/children`);

/** One process of a watched tree, its files open. */
interface Watched {
  /** `/proc/<pid>/stat`: the main thread's state and the thread count. */
  readonly stat: number;
  /** `/proc/<pid>/task/<pid>/children`; undefined while it could not be opened (tried again at each look). */
  children: number | undefined;
  /** The other threads' stat files, by thread id. */
  readonly threads: Map<string, number>;
}

/**
 * Looks at one process tree's activity, its /proc files kept open until `close()` while all watches
 * together hold at most `maxKeptFiles` (default MAX_KEPT_FILES). What cannot be seen (a file that
 * cannot be opened or read while its process lives: no descriptor left, say) makes the answer
 * `unknown`, never `idle`: the round then waits for a time gap instead.
 */
export class ProcessWatch {
  readonly #root: number;
  readonly #maxKept: number;
  readonly #watched = new Map<number, Watched>();
  #closed = false;
  /** Something of the tree could not be seen in the current look. */
  #blind = false;
  /**
   * The last whole look walked the whole tree and saw all of it (it neither stopped at a busy thread
   * nor went blind): what `main` scope reads is then the tree, not part of it.
   */
  #complete = false;
  /** `main` looks since the last whole one: every MAIN_LOOKS_PER_WHOLE-th is whole (a process started since is found). */
  #mainLooks = 0;

  constructor(pid: number, opts: { maxKeptFiles?: number } = {}) {
    this.#root = pid;
    this.#maxKept = opts.maxKeptFiles ?? MAX_KEPT_FILES;
  }

  /**
   * Busy, idle, or unknown (a process gone, /proc not readable, no file left to open). In `main`
   * scope, only the main thread of each process the last whole look found, when it saw the whole tree
   * (one read a process, not one a thread): a whole look instead when it did not (there was none, it
   * stopped at a busy thread, or went blind), when a process of it is gone, and every
   * MAIN_LOOKS_PER_WHOLE-th time.
   */
  activity(scope: ActivityScope = 'threads'): BackendActivity {
    if (!canSeeProcessActivity || this.#closed) return 'unknown';
    this.#blind = false;
    const activity = (scope === 'main' ? this.#mainThreads() : undefined) ?? this.#look();
    // Too many files held by all watches together: this one lets go of its own until its next look.
    if (keptFiles > this.#maxKept) this.#releaseAll();
    return activity === 'idle' && this.#blind ? 'unknown' : activity;
  }

  /** Busy or idle by each watched process's main thread; undefined when the tree is not known whole, one is gone, or a whole look is due. */
  #mainThreads(): BackendActivity | undefined {
    if (!this.#complete || ++this.#mainLooks >= MAIN_LOOKS_PER_WHOLE) return undefined;
    for (const w of this.#watched.values()) {
      const state = stateOf(w.stat);
      if (!state) return undefined;
      if (state.letter === R || state.letter === D) return 'busy';
    }
    return 'idle';
  }

  #look(): BackendActivity {
    this.#complete = false;
    this.#mainLooks = 0;
    const pids = [this.#root];
    let seen = false;
    for (let i = 0; i < pids.length && i < MAX_PROCESSES; i++) {
      const pid = pids[i]!;
      let w = this.#watch(pid);
      let state = w && stateOf(w.stat, true);
      if (w && !state) {
        // The files held are a process that is gone; the pid may be a new process of the tree now.
        this.#forget(pid);
        w = this.#watch(pid);
        state = w && stateOf(w.stat, true);
      }
      if (!w || !state) {
        this.#forget(pid); // exited meanwhile
        continue;
      }
      if (state.letter === R || state.letter === D) return 'busy';
      seen = true;
      if (state.threads !== w.threads.size + 1) this.#listThreads(pid, w);
      if (this.#threadsBusy(pid, w)) return 'busy';
      this.#addChildren(pid, w, pids);
    }
    // A whole look: processes no longer in the tree are let go.
    for (const pid of this.#watched.keys()) if (!pids.includes(pid)) this.#forget(pid);
    this.#complete = seen && !this.#blind;
    return seen ? 'idle' : 'unknown';
  }

  /** Closes every file. Idempotent; `activity()` is unknown after it. */
  close(): void {
    this.#closed = true;
    this.#releaseAll();
  }

  #releaseAll(): void {
    this.#complete = false;
    for (const pid of [...this.#watched.keys()]) this.#forget(pid);
  }

  #watch(pid: number): Watched | undefined {
    const known = this.#watched.get(pid);
    if (known) return known;
    const stat = this.#open(`/proc/${pid}/stat`);
    if (stat === undefined) return undefined;
    const w: Watched = { stat, children: undefined, threads: new Map() };
    this.#watched.set(pid, w);
    this.#listThreads(pid, w);
    return w;
  }

  /**
   * Whether a thread other than the main one runs. A thread whose file cannot be read is gone: its
   * file is let go, the others are still looked at, and the list is read again (a new thread may have
   * taken its place, its very id included).
   */
  #threadsBusy(pid: number, w: Watched): boolean {
    let gone = false;
    for (const [tid, fd] of w.threads) {
      const thread = stateOf(fd);
      if (!thread) {
        release(fd);
        w.threads.delete(tid);
        gone = true;
      } else if (thread.letter === R || thread.letter === D) return true;
    }
    if (!gone) return false;
    this.#listThreads(pid, w);
    for (const fd of w.threads.values()) {
      const thread = stateOf(fd); // unreadable now: it exited meanwhile
      if (thread && (thread.letter === R || thread.letter === D)) return true;
    }
    return false;
  }

  /** Reads the process's thread list again: files opened for new threads, closed for gone ones. */
  #listThreads(pid: number, w: Watched): void {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch (e) {
      // Gone: the next read of its stat says so. Anything else: its threads cannot be seen.
      if (!isGone(e)) this.#blind = true;
      return;
    }
    const now = new Set(tids);
    for (const [tid, fd] of w.threads) {
      if (now.has(tid)) continue;
      release(fd);
      w.threads.delete(tid);
    }
    const main = String(pid);
    for (const tid of tids) {
      if (tid === main || w.threads.has(tid)) continue;
      const fd = this.#open(`/proc/${pid}/task/${tid}/stat`);
      if (fd !== undefined) w.threads.set(tid, fd);
    }
  }

  /** Adds the process's children (started from its main thread) to `pids`. */
  #addChildren(pid: number, w: Watched, pids: number[]): void {
    w.children ??= this.#open(`/proc/${pid}/task/${pid}/children`);
    const n = w.children === undefined ? undefined : readAt(w.children);
    if (n === undefined) {
      if (w.children !== undefined) this.#blind = true;
      return;
    }
    for (const s of buffer.toString('latin1', 0, n).split(' ')) if (s !== '' && s !== '\n') pids.push(Number(s));
  }

  /** Opens a file of a live process; one that cannot be opened for another reason than its going makes the look blind. */
  #open(path: string): number | undefined {
    try {
      return open(path);
    } catch (e) {
      if (!isGone(e)) this.#blind = true;
      return undefined;
    }
  }

  #forget(pid: number): void {
    const w = this.#watched.get(pid);
    if (!w) return;
    this.#watched.delete(pid);
    release(w.stat);
    if (w.children !== undefined) release(w.children);
    for (const fd of w.threads.values()) release(fd);
  }
}

/** The error of a /proc file whose process or thread is gone (not one of a full descriptor table, say). */
function isGone(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ESRCH';
}

/** The state letter of a stat file and, with `count`, the thread count; undefined when it cannot be read (the thread is gone). */
function stateOf(fd: number, count = false): { letter: number; threads: number } | undefined {
  const n = readAt(fd);
  if (n === undefined || n === 0) return undefined;
  const line = buffer.toString('latin1', 0, n);
  return count ? parseStat(line) : { letter: line.charCodeAt(line.lastIndexOf(')') + 2), threads: 0 };
}

/** A /proc stat line's state (as a char code) and thread count (proc(5) fields 3 and 20; the command's name may hold spaces and parentheses). */
export function parseStat(line: string): { letter: number; threads: number } {
  const state = line.lastIndexOf(')') + 2;
  return { letter: line.charCodeAt(state), threads: Number(line.slice(state).split(' ', THREADS_AFTER_STATE + 1)[THREADS_AFTER_STATE]) };
}

function readAt(fd: number): number | undefined {
  try {
    return readSync(fd, buffer, 0, buffer.length, 0);
  } catch {
    return undefined;
  }
}

/** Opens a /proc file, counted in `keptFiles` until `release`; throws as `openSync` does. */
function open(path: string): number {
  const fd = openSync(path, 'r');
  keptFiles++;
  return fd;
}

function release(fd: number): void {
  keptFiles--;
  closeSync(fd);
}

function readable(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}
