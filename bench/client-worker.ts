/**
 * One client thread of `client-threads.ts`: an official SDK client (v1 or v2, as `workerData` says)
 * to one URL, calling `echo` with the load it is told (`warm`: untimed calls; `run`: timed ones),
 * answering with the latencies and the CPU this thread ran (`clientCpuMs`). Nothing else runs on
 * the thread, so its CPU is the client library's and the load loop's.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { v1Client, v2Client } from './clients.js';
import { clientCpuMs, timedLoad } from './measure.js';
import { quietSignalListenerWarnings } from './quiet-warnings.js';

export interface ClientWorkerData {
  readonly kind: 'v1' | 'v2';
  readonly url: string;
}

/** What the main thread asks of a client thread. */
export type ClientWorkerAsk = { op: 'warm' | 'run'; concurrency: number; total: number; text: string } | { op: 'close' };

/** What it answers: after `warm`, nothing but done; after `run`, the run's latencies (ms, unsorted) and this thread's CPU ms. */
export type ClientWorkerAnswer =
  { op: 'ready' } | { op: 'warmed' } | { op: 'ran'; latencies: number[]; errors: number; cpuMs: number } | { op: 'failed'; error: string };

quietSignalListenerWarnings();
const port = parentPort!;
const { kind, url } = workerData as ClientWorkerData;
try {
  const echo = (text: string) => ({ name: 'echo', arguments: { text } });
  let call: (text: string) => Promise<void>;
  let close: () => Promise<void>;
  if (kind === 'v1') {
    const client = await v1Client(url);
    call = async (text) => void (await client.callTool(echo(text)));
    close = () => client.close();
  } else {
    const client = await v2Client(url);
    call = async (text) => void (await client.callTool(echo(text)));
    close = () => client.close();
  }
  const serve = async (ask: ClientWorkerAsk): Promise<ClientWorkerAnswer | undefined> => {
    if (ask.op === 'close') {
      await close();
      port.close();
      return undefined;
    }
    const before = clientCpuMs();
    const load = await timedLoad(() => call(ask.text), ask);
    return ask.op === 'warm' ? { op: 'warmed' } : { op: 'ran', latencies: load.latencies, errors: load.errors, cpuMs: clientCpuMs() - before };
  };
  port.on('message', (ask: ClientWorkerAsk) => {
    serve(ask).then(
      (answer) => answer && port.postMessage(answer),
      (e: unknown) => port.postMessage({ op: 'failed', error: (e as Error).message } satisfies ClientWorkerAnswer),
    );
  });
  port.postMessage({ op: 'ready' } satisfies ClientWorkerAnswer);
} catch (e) {
  port.postMessage({ op: 'failed', error: (e as Error).message } satisfies ClientWorkerAnswer);
}
