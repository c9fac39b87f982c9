/**
 * A redis-server of a test's own, on a free port, that the test may stop and start again (empty: no
 * RDB, no AOF, as a cache-style Redis comes back). Never the shared Redis of the other tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './processes.js';
import { until } from './until.js';

export interface OwnRedis {
  readonly url: string;
  readonly port: number;
  /** True while the server process runs. */
  readonly running: boolean;
  /** Starts it (again, empty); resolves once it answers PING. */
  start(): Promise<void>;
  /** Stops it (SIGKILL, as a crash; `graceful`: SIGTERM); resolves once the process is gone. */
  stop(graceful?: boolean): Promise<void>;
  /** Freezes it (SIGSTOP: connections stay open, nothing is answered) or thaws it (SIGCONT). */
  freeze(frozen: boolean): void;
}

/** True when something on `port` answers `PING` with `+PONG`. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

export async function ownRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const own: OwnRedis = {
    url: `redis://127.0.0.1:${port}`,
    port,
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    },
    async start() {
      if (own.running) return;
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
        stdio: 'ignore',
      });
      const started = child;
      await until(`redis-server to start on port ${port} (or exit)`, async () => started.exitCode !== null || (await pings(port)));
      if (started.exitCode !== null) throw new Error(`redis-server did not start on port ${port}`);
    },
    freeze(frozen) {
      if (own.running) child!.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
    },
    async stop(graceful = false) {
      const c = child;
      if (!c || !own.running) return;
      c.kill('SIGCONT'); // a frozen server handles no SIGTERM
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill(graceful ? 'SIGTERM' : 'SIGKILL');
      });
    },
  };
  await own.start();
  return own;
}
