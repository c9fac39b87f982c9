/**
 * A figure's client on threads of its own: each thread (client-worker.ts) runs one official SDK client
 * to the system and an even share of the figure's concurrency and calls. On the bench's one main
 * thread an SDK client's own CPU bounds the calls it can make (the v2 client spent about 0.55 ms of
 * its thread a call, about 1,800 calls/s, which the gateway reached with that thread 94% busy): the
 * load generator, not the system, set the figure. The client CPU reported is every client thread's.
 */
import { Worker } from 'node:worker_threads';
import type { ClientWorkerAnswer, ClientWorkerAsk, ClientWorkerData } from './client-worker.js';
import type { Load, TimedLoad } from './measure.js';

export interface ClientThreads extends Load {
  close(): Promise<void>;
}

/** How many client threads a threaded figure uses: one per core of the machine the bench was built for (2). */
export const CLIENT_THREADS = 2;

/** `threads` client threads of `kind` calling `echo` with `text` on `url`, connected. */
export async function startClientThreads(kind: ClientWorkerData['kind'], url: string, text: string, threads = CLIENT_THREADS): Promise<ClientThreads> {
  const workers = Array.from({ length: threads }, () => new ClientThread({ kind, url }));
  try {
    await Promise.all(workers.map((w) => w.ready));
  } catch (e) {
    await Promise.all(workers.map((w) => w.close()));
    throw e;
  }
  /** The i-th thread's share of `n`. */
  const share = (n: number, i: number): number => Math.floor(n / threads) + (i < n % threads ? 1 : 0);
  const each = (op: 'warm' | 'run', opts: { concurrency: number; total: number }) =>
    Promise.all(workers.map((w, i) => w.ask({ op, concurrency: Math.max(1, share(opts.concurrency, i)), total: share(opts.total, i), text })));
  return {
    async warm(opts) {
      await each('warm', opts);
    },
    async run(opts) {
      const started = performance.now();
      const answers = await each('run', opts);
      const elapsedMs = performance.now() - started;
      const ran = answers.filter((a) => a.op === 'ran');
      const load: TimedLoad = { latencies: ran.flatMap((a) => a.latencies), errors: ran.reduce((n, a) => n + a.errors, 0), elapsedMs };
      return { load, clientCpuMs: ran.reduce((ms, a) => ms + a.cpuMs, 0) };
    },
    close: async () => void (await Promise.all(workers.map((w) => w.close()))),
  };
}

/** One client thread: its asks answered in order, one at a time. */
class ClientThread {
  readonly ready: Promise<void>;
  readonly #worker: Worker;
  #waiting: ((a: ClientWorkerAnswer) => void) | undefined;
  #exited = false;

  constructor(data: ClientWorkerData) {
    this.#worker = new Worker(new URL('./client-worker.mjs', import.meta.url), { workerData: data });
    this.#worker.on('message', (a: ClientWorkerAnswer) => this.#waiting?.(a));
    this.#worker.on('error', (e) => this.#waiting?.({ op: 'failed', error: e.message }));
    this.#worker.on('exit', () => {
      this.#exited = true;
      this.#waiting?.({ op: 'failed', error: 'the client thread exited' });
    });
    this.ready = this.#next().then(() => undefined);
  }

  /** The thread's answer to `ask`; rejects with its failure. */
  async ask(ask: ClientWorkerAsk): Promise<ClientWorkerAnswer> {
    const answer = this.#next();
    this.#worker.postMessage(ask);
    return answer;
  }

  async close(): Promise<void> {
    if (this.#exited) return;
    const exited = new Promise((resolve) => this.#worker.once('exit', resolve));
    this.#worker.postMessage({ op: 'close' } satisfies ClientWorkerAsk);
    // A client's keep-alive sockets may hold the thread open: it is ended after 5 s at most.
    const timer = setTimeout(() => {
      this.#worker.terminate().catch(() => undefined);
    }, 5_000);
    await exited;
    clearTimeout(timer);
  }

  #next(): Promise<ClientWorkerAnswer> {
    return new Promise((resolve, reject) => {
      this.#waiting = (a) => {
        this.#waiting = undefined;
        if (a.op === 'failed') reject(new Error(`client thread: ${a.error}`));
        else resolve(a);
      };
    });
  }
}
