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
 * the grace, in tenths of a second). `kill -s SIG -- -pgid` is the form dash and bash both read.
 */
const SCRIPT = `
trap '' INT HUP
g=' '
while IFS= read -r l; do
  case $l in
    +*) g="$g\${l#+} " ;;
    -*) k=' '; for p in $g; do [ "$p" = "\${l#-}" ] || k="$k$p "; done; g=$k ;;
  esac
done
live() { k=' '; for p in $g; do kill -s 0 -- "-$p" 2>/dev/null && k="$k$p "; done; g=$k; [ "$g" != ' ' ]; }
for s in TERM KILL; do
  n=0
  while live && [ "$n" -lt "$1" ]; do sleep 0.1; n=$((n + 1)); done
  live || exit 0
  for p in $g; do kill -s "$s" -- "-$p" 2>/dev/null; done
done
`;

/** One reaper process and the pipe to it. */
class Reaper {
  readonly #child: ChildProcess;
  readonly exited: Promise<void>;
  #ended = false;

  constructor(shell: string, graceMs: number, onUnexpectedExit: (started: boolean) => void, log: Logger) {
    const child = spawn(shell, ['-c', SCRIPT, 'mcp-gateway-reaper', String(Math.ceil(graceMs / 100))], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true, // a session of its own: a terminal's Ctrl-C or hang-up does not reach it
    });
    this.#child = child;
    let started = true;
    this.exited = new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', (error) => {
        started = false;
        log.warn({ err: error.message, shell }, 'cannot start the process-group reaper: a gateway killed outright leaves its backends running');
        resolve();
      });
    });
    this.exited.then(
      () => {
        if (!this.#ended) onUnexpectedExit(started);
      },
      () => undefined, // never rejects
    );
    // Neither the process nor its pipe keeps the gateway running: it is there for when the gateway is not.
    child.unref();
    const stdin = child.stdin!;
    (stdin as unknown as { unref?: () => void }).unref?.();
    stdin.on('error', () => undefined); // EPIPE once it has gone: what it was told no longer matters
  }

  tell(line: string): void {
    if (!this.#ended) this.#child.stdin!.write(`${line}\n`);
  }

  /** Ends its input: with nothing listed it exits at once. */
  end(): Promise<void> {
    this.#ended = true;
    this.#child.stdin!.end();
    return this.exited;
  }
}

/** The groups the reaper of this gateway process is to end if the gateway dies, and that reaper. */
export class GroupReaper {
  readonly #groups = new Set<number>();
  readonly #graceMs: number;
  #reaper: Reaper | undefined;
  /** `/bin/sh` could not be started: not tried again (warned once). */
  #unavailable = false;

  readonly #shell: string;

  /** `graceMs`: before SIGTERM, and between SIGTERM and SIGKILL; `shell`: a POSIX shell (tests name one that is not there). */
  constructor(graceMs = KILL_GRACE_MS, shell = '/bin/sh') {
    this.#graceMs = graceMs;
    this.#shell = shell;
  }

  /** The number of groups listed (tests). */
  get size(): number {
    return this.#groups.size;
  }

  /** Lists group `pgid` (a backend's process just started, leading it); starts the reaper if none runs. */
  watch(pgid: number, log: Logger): void {
    if (process.platform === 'win32' || this.#unavailable || !Number.isSafeInteger(pgid) || pgid <= 1) return;
    this.#groups.add(pgid);
    if (this.#reaper) return this.#reaper.tell(`+${pgid}`);
    const reaper = new Reaper(this.#shell, this.#graceMs, (started) => this.#lost(reaper, started), log);
    this.#reaper = reaper;
    for (const group of this.#groups) reaper.tell(`+${group}`);
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

  /**
   * The reaper exited while groups were listed (killed by hand): the next group started starts another,
   * told of every group. One that could not start is not tried again.
   */
  #lost(reaper: Reaper, started: boolean): void {
    if (this.#reaper === reaper) this.#reaper = undefined;
    if (!started) {
      this.#unavailable = true;
      this.#groups.clear();
    }
  }
}

/** The reaper of this gateway process: every stdio backend's group is listed with it. */
export const groupReaper = new GroupReaper();
