/**
 * The wire under a legacy backend session: the SDK transport a server's configuration asks for —
 * stdio (our own, each server in a process group of its own: stdio-transport.ts), streamable HTTP
 * (our own leg on node:http, which also correlates backend requests to calls: streamable-http-leg.ts)
 * or HTTP+SSE (the SDK's, with `traceparent` from traced-fetch.ts), both sending, when the entry has
 * `auth`, the gateway's own bearer token (backend-credentials.ts; never the client's) — and
 * what the session wraps around it once connected (traffic counting, concurrent writes).
 */
import { setMaxListeners } from 'node:events';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ServerConfig } from '../../config.js';
import type { Logger } from '../../log.js';
import { withCredentials, type BackendCredentials } from './backend-credentials.js';
import type { Traffic } from './liveness.js';
import { createStdioTransport } from './stdio-transport.js';
import { StreamableHttpLeg, type StreamLost } from './streamable-http-leg.js';
import { withTraceparent, type FetchLike } from './traced-fetch.js';

/** Lines of a stdio backend's stderr kept for diagnostics (a failed start is reported with them). */
const STDERR_TAIL_LINES = 20;

/**
 * The transport of a new session with `server`. A stdio backend's stderr is drained into `stderrTail`
 * (its last STDERR_TAIL_LINES lines); `onStreamLost` hears of a call's response stream that broke
 * (streamable HTTP). `credentials`: the HTTP backend's bearer tokens (its `auth` entry).
 */
export function createSessionTransport(
  server: ServerConfig,
  logger: Logger,
  stderrTail: string[],
  onStreamLost: StreamLost,
  credentials?: BackendCredentials,
): Transport {
  if (server.kind === 'stdio') {
    // Its own process group on POSIX: closing ends the wrapper (npx, uvx, sh) and the server it started.
    const t = createStdioTransport(server, logger);
    // Drain the backend's stderr so it never blocks; lines go to debug (they are the backend's, not
    // ours) and the last few are kept to explain a failed start.
    t.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8').trimEnd();
      logger.debug({ stderr: text.slice(0, 2000) }, 'backend stderr');
      for (const line of text.split('\n')) if (line.trim()) stderrTail.push(line.slice(0, 500));
      stderrTail.splice(0, Math.max(0, stderrTail.length - STDERR_TAIL_LINES));
    });
    return t;
  }
  // Only the entry's own headers (and its token) go to the backend: nothing of a client's request does.
  const headers = server.headers;
  if (server.transport === 'sse') {
    const authorized = withCredentials(withTraceparent(sharedSignalFetch), credentials);
    const stream = withCredentials(sharedSignalFetch, credentials);
    return new SSEClientTransport(new URL(server.url), {
      requestInit: { headers },
      fetch: authorized,
      eventSourceInit: {
        // The SDK gives a Headers object (Accept, the entry's headers): add to it, never spread it.
        fetch: (u, init) => {
          const merged = new Headers(init?.headers);
          for (const [k, v] of Object.entries(headers)) merged.set(k, v);
          return stream(u, { ...init, headers: merged });
        },
      },
    });
  }
  return new StreamableHttpLeg({ url: new URL(server.url), headers, credentials, onStreamLost });
}

/**
 * Counts every message the backend sends (responses, notifications, its own requests) as traffic:
 * the SDK's client has set the transport's `onmessage` by now; this wraps it.
 */
export function countTraffic(transport: Transport, traffic: Traffic): void {
  traffic.seen();
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    traffic.seen();
    deliver?.(message, extra);
  };
}

/**
 * The SDK's stdio transport (used on Windows) waits for `drain` once per write the pipe refuses; many
 * calls sharing one process under load then hold more than ten such listeners, which is expected and
 * not a leak, so the warning about it is lifted for that pipe. (The pipe is not part of the SDK's
 * public surface; our own transport lifts it itself.)
 */
export function allowConcurrentWrites(transport: Transport): void {
  const stdin = (transport as { _process?: { stdin?: { setMaxListeners?(n: number): void } } })._process?.stdin;
  stdin?.setMaxListeners?.(0);
}

/**
 * Global fetch for the SDK's HTTP+SSE transport, which passes every request the one signal its
 * transport lives by. undici adds an abort listener to that signal per request, removed once the
 * request is garbage collected: past 1,500 of them between collections Node printed a
 * MaxListenersExceededWarning per request. Their number is bounded by the collector, so the warning
 * is lifted on that signal. (`AbortSignal.any` per request would keep a reference per request on the
 * transport's signal for good on Node 20.)
 */
export const sharedSignalFetch: FetchLike = (input, init) => {
  if (init?.signal) setMaxListeners(0, init.signal);
  return fetch(input, init);
};
