/**
 * The stdio transport of a legacy backend: starts the server's command and speaks newline-delimited
 * JSON-RPC over its stdin/stdout, with the SDK's own framing (`serializeMessage`; lines read as its
 * `ReadBuffer` reads them, json-rpc-lines.ts) and
 * the SDK's default environment, as the SDK's `StdioClientTransport` does, with one difference: on
 * POSIX the process leads a process group of its own, and the whole group is ended (process-group.ts).
 * `npx -y some-server`, `uvx`, `sh -c` start the real server as a child of theirs; ending only the
 * wrapper leaves that server running, re-parented, holding our pipes.
 *
 * Ending (on `close()`, or when the started process exits on its own), as the MCP lifecycle asks of a
 * stdio client: stdin ends and the process has KILL_GRACE_MS to exit by itself (it reads what was sent
 * before the end — a cancellation, say — and may save its state), then SIGTERM to the group, SIGKILL
 * after KILL_GRACE_MS more; then the pipes are destroyed, so nothing that escaped the group can keep
 * the gateway's event loop alive, and `onclose` runs once. `close()` resolves only then.
 *
 * A gateway killed outright runs none of this: the group reaper (group-reaper.ts), told of each group
 * while it runs, ends it then.
 *
 * Windows has no process groups: there `createStdioTransport` returns the SDK's transport, which ends
 * the started process only.
 */
import { existsSync } from 'node:fs';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { PassThrough, type Stream } from 'node:stream';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../log.js';
import { sleep } from '../../util/abort.js';
import { background } from '../../util/background.js';
import { LineBuffer, parseMessage } from './json-rpc-lines.js';
import { KILL_GRACE_MS, endProcessGroup, type GroupEnd } from './process-group.js';
import { groupReaper } from './group-reaper.js';
import type { ActivityScope, BackendActivity } from './port.js';
import { ProcessWatch } from './process-activity.js';

/** After its group is gone, how long the started process's exit and the last output may take to arrive. */
const SETTLE_AFTER_END_MS = 500;
const NEWLINE = 0x0a;

export interface StdioCommand {
  readonly command: string;
  readonly args?: readonly string[] | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
}

/** A stdio transport exposing the backend's stderr (for diagnostics). */
export interface StdioTransport extends Transport {
  readonly stderr: Stream | null;
  /** Whether the backend may still be sending (see ProcessGroupTransport); absent: not known. */
  activity?(scope?: ActivityScope): BackendActivity;
}

/** The transport for a stdio backend: process-group aware on POSIX, the SDK's own on Windows. */
export function createStdioTransport(server: StdioCommand, logger: Logger): StdioTransport {
  if (process.platform === 'win32') {
    return new StdioClientTransport({
      command: server.command,
      args: [...(server.args ?? [])],
      ...(server.env ? { env: { ...server.env } } : {}),
      ...(server.cwd !== undefined ? { cwd: server.cwd } : {}),
      stderr: 'pipe',
    });
  }
  return new ProcessGroupTransport(server, logger);
}

export class ProcessGroupTransport implements StdioTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The backend's stderr, there from construction so no early line is missed. */
  readonly stderr = new PassThrough();
  readonly #server: StdioCommand;
  readonly #log: Logger;
  readonly #graceMs: number;
  readonly #readBuffer = new LineBuffer();
  #child: ChildProcessWithoutNullStreams | undefined;
  #spawned = false;
  #exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #exited: Promise<void> = Promise.resolve();
  #outputDone: Promise<void> = Promise.resolve();
  #ending: Promise<void> | undefined;
  /** The last bytes read end inside a message: the rest is on its way. */
  #partial = false;
  /**
   * The process was seen idle and nothing has been read from it or sent to it since: it still is (a
   * sleeping process stays asleep until something wakes it; what it writes then is read, and forgets this).
   */
  #seenIdle = false;
  /** Writes are being gathered until the current turn of the event loop ends (`send`). */
  #gathering = false;
  /** The process tree's /proc files, open from the first look until the group is ended. */
  #watch: ProcessWatch | undefined;

  /** `graceMs`: between the end of stdin and SIGTERM, and between SIGTERM and SIGKILL (default KILL_GRACE_MS). */
  constructor(server: StdioCommand, logger: Logger, graceMs = KILL_GRACE_MS) {
    this.#server = server;
    this.#log = logger;
    this.#graceMs = graceMs;
  }

  /** How the process exited, once it has (its code, or the signal that ended it). */
  get exitStatus(): { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined {
    return this.#exit;
  }

  start(): Promise<void> {
    if (this.#child || this.#ending) return Promise.reject(new Error('ProcessGroupTransport already started'));
    return new Promise((resolve, reject) => {
      const child = spawn(this.#server.command, [...(this.#server.args ?? [])], {
        env: { ...getDefaultEnvironment(), ...this.#server.env },
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true, // leads a process group of its own (and leaves ours: a terminal's Ctrl-C reaches only the gateway)
        shell: false,
        ...(this.#server.cwd !== undefined ? { cwd: this.#server.cwd } : {}),
      });
      this.#child = child;
      // Listed with the reaper, which ends the group if this gateway is killed outright (group-reaper.ts).
      if (child.pid !== undefined) groupReaper.watch(child.pid, this.#log);
      this.#exited = new Promise((r) => child.once('exit', () => r()));
      this.#outputDone = new Promise((r) => child.stdout.once('close', () => r()));
      child.on('error', (error) => {
        this.onerror?.(error);
        if (this.#spawned) return;
        reject(spawnError(error, this.#server.cwd));
        this.#beginEnd();
      });
      child.once('spawn', () => {
        this.#spawned = true;
        resolve();
      });
      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        if (!this.#ending) this.#beginEnd();
      });
      // Many calls share one process: each write the pipe refuses waits for `drain`, which is expected.
      child.stdin.setMaxListeners(0);
      child.stdin.on('error', (error) => this.onerror?.(error));
      child.stdout.on('error', (error) => this.onerror?.(error));
      child.stderr.on('error', (error) => this.onerror?.(error));
      child.stdout.on('data', (chunk: Buffer) => this.#read(chunk));
      child.stderr.pipe(this.stderr);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#ending || !stdin.writable) return Promise.reject(new Error('Not connected'));
    this.#seenIdle = false;
    // The messages sent in one turn of the event loop (many calls' requests arrive together under
    // load) go out in one write when it ends: one system call, and one wake-up of the backend for all.
    if (!this.#gathering) {
      this.#gathering = true;
      stdin.cork();
      setImmediate(() => {
        this.#gathering = false;
        stdin.uncork();
      });
    }
    return new Promise((resolve, reject) => {
      if (stdin.write(serializeMessage(message))) return resolve();
      const settle = (error?: Error): void => {
        stdin.off('drain', onDrain);
        stdin.off('close', onClose);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = (): void => settle();
      const onClose = (): void => settle(new Error('Not connected'));
      stdin.once('drain', onDrain);
      stdin.once('close', onClose);
    });
  }

  /**
   * Whether the backend may still be sending: part of a message read, or its process tree at work
   * (process-activity.ts: every thread, or in `main` scope each process's main thread); 'unknown'
   * where processes cannot be seen. Idle in a whole look, it is idle until the next read or write.
   */
  activity(scope: ActivityScope = 'threads'): BackendActivity {
    // Bytes gathered for the backend and not yet written: it is about to work, whatever /proc says now.
    if (this.#partial || this.#gathering) return 'busy';
    const pid = this.#child?.pid;
    if (pid === undefined || this.#ending) return 'unknown';
    if (this.#seenIdle) return 'idle';
    const activity = (this.#watch ??= new ProcessWatch(pid)).activity(scope);
    this.#seenIdle = activity === 'idle' && scope === 'threads';
    return activity;
  }

  /** Ends the backend's process group; resolves when it is gone (or given up on) and the pipes are closed. */
  close(): Promise<void> {
    return this.#endOnce();
  }

  #read(chunk: Buffer): void {
    this.#partial = chunk.length > 0 && chunk[chunk.length - 1] !== NEWLINE;
    this.#seenIdle = false;
    try {
      this.#readBuffer.append(chunk);
    } catch (error) {
      this.onerror?.(error as Error); // more than the buffer's limit without a newline
      this.#beginEnd();
      return;
    }
    for (;;) {
      const line = this.#readBuffer.nextLine();
      if (line === null) return;
      let message: JSONRPCMessage;
      try {
        message = parseMessage(line);
      } catch (error) {
        this.onerror?.(error as Error); // a line that is not JSON-RPC: skipped
        continue;
      }
      this.onmessage?.(message);
    }
  }

  /** Ends the process group, once: every caller gets the same promise. */
  #endOnce(): Promise<void> {
    this.#ending ??= this.#end();
    return this.#ending;
  }

  /** Starts ending the group without waiting for it (the process exited, or its output broke the framing). */
  #beginEnd(): void {
    background('end a backend process group', this.#endOnce(), this.#log);
  }

  async #end(): Promise<void> {
    const child = this.#child;
    const byItself = this.#exit !== undefined;
    try {
      if (child) {
        try {
          child.stdin.end();
        } catch {
          // already closed
        }
        // A pid means the process exists, even if `spawn` has not been reported yet (a close during connect).
        if (child.pid !== undefined) {
          const started = Date.now();
          // Its input ended: a moment to read what came before the end and exit by itself.
          if (!byItself) await settleWithin([this.#exited], this.#graceMs);
          const how = await endProcessGroup(child.pid, this.#graceMs);
          this.#report(how, child.pid, byItself, Date.now() - started);
          await groupReaper.release(child.pid);
          // The group is gone: the leader's exit is reported, and its last output read, at once.
          await settleWithin([this.#exited, this.#outputDone], SETTLE_AFTER_END_MS);
        }
        child.stdin.destroy();
        child.stdout.destroy();
        child.stderr.destroy();
        child.unref();
      }
    } finally {
      this.#watch?.close();
      this.#readBuffer.clear();
      this.stderr.end();
      this.onclose?.();
    }
  }

  /** The operator's view of how the group ended. */
  #report(how: GroupEnd, pid: number, byItself: boolean, ms: number): void {
    const fields = { pid, ms, ...(byItself ? { exitCode: this.#exit?.code, exitSignal: this.#exit?.signal } : {}) };
    if (how === 'killed') this.#log.warn({ ...fields, graceMs: this.#graceMs }, 'backend process group outlived SIGTERM: killed (SIGKILL)');
    else if (how === 'survived') this.#log.warn(fields, 'backend process group still has processes after SIGKILL: left behind, pipes closed');
    else if (how === 'terminated' && byItself) this.#log.info(fields, 'backend process exited and left processes in its group: ended them (SIGTERM)');
    else this.#log.debug({ ...fields, how }, 'backend process group ended');
  }
}

/** Waits for every promise, or `ms`, whichever is first; the timer is cancelled. */
async function settleWithin(promises: Promise<void>[], ms: number): Promise<void> {
  const timer = new AbortController();
  try {
    await Promise.race([Promise.all(promises), sleep(ms, timer.signal, true)]);
  } finally {
    timer.abort();
  }
}

/**
 * Why a process did not start, as an operator reads it: Node says `spawn npx ENOENT` for a `cwd` that
 * does not exist too, which points at the command.
 */
function spawnError(error: NodeJS.ErrnoException, cwd: string | undefined): Error {
  if (error.code !== 'ENOENT' || cwd === undefined || existsSync(cwd)) return error;
  // No `cause`: the health of a backend shows the innermost message of a chain (start-failure.ts).
  return Object.assign(new Error(`cwd ${cwd} does not exist (${error.message})`), { code: error.code });
}
