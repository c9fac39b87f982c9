/**
 * What ends the backends' process groups when the gateway cannot: a gateway killed outright (SIGKILL,
 * the OOM killer) runs no code, and a backend that does not exit when its stdin ends (an `npx` server
 * with a request of its own still waiting, a periodic task) would outlive it, re-parented.
 *
 * A small POSIX `sh` process (the reaper), in a session of its own, holds a pipe from the gateway. The
 * gateway writes `+<pgid>` when a backend's group starts and `-<pgid>` once it is gone. When the pipe
 * ends — the gateway exited, whichever way — the reaper gives the groups still listed KILL_GRACE_MS to
 * exit by themselves (their stdin ended too), then sends SIGTERM to each, KILL_GRACE_MS more, then
 * SIGKILL, and exits. A gateway that ends its backends itself (every close, a drain) has released them
 * all first: the reaper then exits at once. One reaper per gateway process, started with the first
 * group and ended with the last, so nothing of it is left while no stdio backend runs.
 *
 * The pgids come from this process only, as numbers. A group's id could be reused after it is gone and
 * before the gateway wrote its `-`: only if the gateway died in that moment, and the system's process
 * ids wrapped around meanwhile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from '../../log.js';
import { sleep } from '../../util/abort.js';
import { KILL_GRACE_MS } from './process-group.js';

/** How long the gateway waits for a reaper it ends (its last group released) to exit. */
const REAPER_EXIT_MS = 1_000;

/**
 * The reaper: reads `+pgid` / `-pgid` lines until its stdin ends, then ends the groups left (`$1`:
 * the grace, in tenths of a second). `kill -0 -pgid` and `kill -TERM -pgid` are the forms dash and bash
 * read, and busybox should by its source (it takes `--` only as the first argument; dash refuses `-s 0 -pgid`).
 * It ignores the signals a terminal or a `pkill` sends: it ends when its input does.
 */
const SCRIPT = `
trap '' INT HUP TERM
g=' '
while IFS= read -r l; do
  case $l in
    +*) g="$g\${l#+} " ;;
    -*) k=' '; for p in $g; do [ "$p" = "\${l#-}" ] || k="$k$p "; done; g=$k ;;
  esac
done
live() { k=' '; for p in $g; do kill -0 "-$p" 2>/dev/null && k="$k$p "; done; g=$k; [ "$g" != ' ' ]; }
for s in TERM KILL; do
  n=0
  while live && [ "$n" -lt "$1" ]; do sleep 0.1; n=$((n + 1)); done
  live || exit 0
  for p in $g; do kill "-$s" "-$p" 2>/dev/null; done
done
`;

/** How a reaper ended without being asked: it could not start (`code`: why), or it exited (killed by hand). */
type ReaperLoss = { started: false; code: string | undefined } | { started: true };

/** One reaper process and the pipe to it. */
class Reaper {
  readonly #child: ChildProcess | undefined;
  readonly exited: Promise<void>;
  #ended = false;

  constructor(shell: string, graceMs: number, onUnexpectedEnd: (reaper: Reaper, loss: ReaperLoss) => void, log: Logger) {
    const failed = (error: NodeJS.ErrnoException): void => {
      log.warn({ err: error.message, shell }, 'cannot start the process-group reaper: a gateway killed outright leaves its backends running');
    };
    let child: ChildProcess | undefined;
    let loss: ReaperLoss = { started: true };
    try {
      child = spawn(shell, ['-c', SCRIPT, 'mcp-gateway-reaper', String(Math.ceil(graceMs / 100))], {
        stdio: ['pipe', 'ignore', 'ignore'],
        detached: true, // a session of its own: a terminal's Ctrl-C or hang-up does not reach it
      });
    } catch (error) {
      loss = { started: false, code: (error as NodeJS.ErrnoException).code };
      failed(error as NodeJS.ErrnoException);
    }
    // Out of file descriptors, Node gives up before it makes the pipes: no stdin, no reaper.
    if (child && !child.stdin) {
      loss = { started: false, code: 'EMFILE' };
      log.warn({ shell }, 'cannot start the process-group reaper (no pipe to it): a gateway killed outright leaves its backends running');
      child.once('error', () => undefined);
      child = undefined;
    }
    this.#child = child;
    this.exited = new Promise((resolve) => {
      if (!child) return resolve();
      child.once('exit', () => resolve());
      child.once('error', (error: NodeJS.ErrnoException) => {
        loss = { started: false, code: error.code };
        failed(error);
        resolve();
      });
    });
    this.exited.then(
      () => {
        if (!this.#ended) onUnexpectedEnd(this, loss);
      },
      () => undefined, // never rejects
    );
    if (!child?.stdin) return;
    // Neither the process nor its pipe keeps the gateway running: it is there for when the gateway is not.
    child.unref();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    child.stdin.on('error', () => undefined); // EPIPE once it has gone: what it was told no longer matters
  }

  tell(line: string): void {
    if (!this.#ended) this.#child?.stdin?.write(`${line}\n`);
  }

  /** Ends its input: with nothing listed it exits at once. */
  end(): Promise<void> {
    this.#ended = true;
    this.#child?.stdin?.end();
    return this.exited;
  }
}

/** Errors of a spawn that say the shell is not there to run: not tried again. */
const NO_SHELL = new Set(['ENOENT', 'EACCES', 'ENOTDIR']);
/** After a reaper ended without being asked, the next one starts no sooner than this (ms). */
const RESTART_AFTER_MS = 1_000;

/** The groups the reaper of this gateway process is to end if the gateway dies, and that reaper. */
export class GroupReaper {
  readonly #groups = new Set<number>();
  readonly #graceMs: number;
  readonly #shell: string;
  #reaper: Reaper | undefined;
  /** The shell is not there: not tried again (warned once). */
  #unavailable = false;
  /** When a reaper last ended without being asked (a restart waits RESTART_AFTER_MS from it). */
  #lostAt = -Infinity;
  #restart: NodeJS.Timeout | undefined;
  #log: Logger | undefined;

  /** `graceMs`: before SIGTERM, and between SIGTERM and SIGKILL; `shell`: a POSIX shell (tests name one that is not there). */
  constructor(graceMs = KILL_GRACE_MS, shell = '/bin/sh') {
    this.#graceMs = graceMs;
    this.#shell = shell;
  }

  /** The number of groups listed (tests). */
  get size(): number {
    return this.#groups.size;
  }

  /** Lists group `pgid` (a backend's process just started, leading it); starts the reaper if none runs. Never throws. */
  watch(pgid: number, log: Logger): void {
    if (process.platform === 'win32' || this.#unavailable || !Number.isSafeInteger(pgid) || pgid <= 1) return;
    this.#log = log;
    this.#groups.add(pgid);
    if (this.#reaper) return this.#reaper.tell(`+${pgid}`);
    this.#start();
  }

  /** Takes group `pgid` off the list (it is gone); after the last one the reaper exits, and this resolves once it has (at most a second). */
  async release(pgid: number): Promise<void> {
    if (!this.#groups.delete(pgid)) return;
    const reaper = this.#reaper;
    if (!reaper) return;
    reaper.tell(`-${pgid}`);
    if (this.#groups.size > 0) return;
    this.#reaper = undefined;
    const timer = new AbortController();
    try {
      await Promise.race([reaper.end(), sleep(REAPER_EXIT_MS, timer.signal, true)]);
    } finally {
      timer.abort();
    }
  }

  /** A reaper, told of every group listed; none while one is due to restart. */
  #start(): void {
    if (this.#restart || this.#groups.size === 0 || !this.#log) return;
    const wait = this.#lostAt + RESTART_AFTER_MS - performance.now();
    if (wait > 0) {
      this.#restart = setTimeout(() => {
        this.#restart = undefined;
        if (!this.#reaper) this.#start();
      }, wait);
      this.#restart.unref();
      return;
    }
    const reaper = new Reaper(this.#shell, this.#graceMs, (lost, loss) => this.#lost(lost, loss), this.#log);
    this.#reaper = reaper;
    for (const group of this.#groups) reaper.tell(`+${group}`);
  }

  /**
   * A reaper ended without being asked: killed by hand (SIGKILL), or it could not start. Another starts,
   * told of every group (no sooner than RESTART_AFTER_MS after the last loss); where the shell is not
   * there at all, none is tried again.
   */
  #lost(reaper: Reaper, loss: ReaperLoss): void {
    if (this.#reaper !== reaper) return;
    this.#reaper = undefined;
    this.#lostAt = performance.now();
    if (!loss.started && loss.code !== undefined && NO_SHELL.has(loss.code)) {
      this.#unavailable = true;
      this.#groups.clear();
      return;
    }
    this.#start();
  }
}

/** The reaper of this gateway process: every stdio backend's group is listed with it. */
export const groupReaper = new GroupReaper();
