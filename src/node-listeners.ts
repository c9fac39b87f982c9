/**
 * The Node servers of a gateway process, listening before the gateway starts (main.ts): a port that
 * cannot be had refuses the start before anything joined a cluster or started a backend. A second
 * process started with a live instance's config had joined as that instance, then, refused its port,
 * closed, and so taken the live one's heartbeat and internal URL out of Redis. Until the gateway is
 * served, a request gets 503 with Retry-After (as while it drains), and a channel's CONNECT a 503 too
 * (the instance that opens it tries again after the Retry-After).
 */
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { serve, type ServerType } from '@hono/node-server';

type Fetch = Parameters<typeof serve>[0]['fetch'];
type ServerOptions = NonNullable<Parameters<typeof serve>[0]['serverOptions']>;
export type ConnectListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface EarlyServer {
  readonly server: ServerType;
  /** The port it listens on (the one given by the system for port 0). */
  readonly port: number;
  /** From now on requests go to `fetch`, and CONNECTs (other instances' channels) to `connect`. */
  serve(fetch: Fetch, connect?: ConnectListener): void;
  /** Stops listening and ends its connections. */
  close(): Promise<void>;
}

const STARTING = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'The gateway is starting; retry in a moment' } });

/** A server on `host:port` that answers 503 until `serve`; the error that kept it from listening, if one did. */
export async function listenEarly(host: string, port: number, serverOptions: ServerOptions): Promise<EarlyServer | NodeJS.ErrnoException> {
  let fetch: Fetch = () => new Response(STARTING, { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' } });
  let connect: ConnectListener = (_req, socket) => {
    socket.on('error', () => undefined);
    socket.end('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n', () => socket.destroy());
  };
  const server = serve({ fetch: (request, env) => fetch(request, env), hostname: host, port, serverOptions });
  server.on('clientError', (e: NodeJS.ErrnoException, socket: Duplex) =>
    answerClientError(e, socket, (serverOptions as { requestTimeout?: number }).requestTimeout),
  );
  const onConnect = (req: IncomingMessage, socket: Duplex, head: Buffer): void => connect(req, socket, head);
  server.on('connect', onConnect);
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once('listening', () => resolve(undefined));
    server.once('error', (e: NodeJS.ErrnoException) => resolve(e));
  });
  if (error) return error;
  return {
    server,
    port: (server.address() as AddressInfo).port,
    serve(f, c) {
      fetch = f;
      // Outside a cluster nothing takes a CONNECT: with no listener, Node closes its socket.
      if (c) connect = c;
      else server.off('connect', onConnect);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

/**
 * Holds `server` to `max` client connections at once (Node's `maxConnections`): one more is closed as it
 * comes (a client sees its connection end; a balancer tries another instance), so idle connections
 * cannot take every file descriptor the process has. `onDrop` is told of each one closed so.
 */
export function limitConnections(server: ServerType, max: number, onDrop: () => void): void {
  const s = server as ServerType & { maxConnections: number };
  s.maxConnections = max;
  server.on('drop', onDrop);
}

/** What Node answers a request it could not take (the code of its error), as a status and why. */
const CLIENT_ERRORS: Record<string, readonly [status: number, text: string, why: string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request did not arrive whole within gateway.requestTimeoutMs'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'the request head is too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Content Too Large', 'the chunk extensions are too large'],
};

/**
 * Node's own answer to a request it could not take (a request that did not arrive whole in time, a head
 * it could not parse or too large), with a JSON-RPC error as its body where Node sends none; and, as
 * Node does, nothing when the answer of the message under way has begun. The connection ends.
 */
function answerClientError(e: NodeJS.ErrnoException, socket: Duplex, requestTimeoutMs: number | undefined): void {
  // As Node judges it: nothing of the current message's answer was written (a keep-alive connection has
  // carried earlier answers; the one it is on now must not be corrupted).
  const s = socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null };
  if (s.writable && !s._httpMessage?.headersSent) {
    const [status, text, why] = CLIENT_ERRORS[e.code ?? ''] ?? [400, 'Bad Request', 'the HTTP request could not be parsed'];
    const limit = status === 408 && requestTimeoutMs !== undefined ? ` (${requestTimeoutMs} ms)` : '';
    const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: `${text}: ${why}${limit}` } });
    const head = `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
    s.end(head + body, () => s.destroy());
    // A client that reads nothing does not hold the connection past a second for it.
    setTimeout(() => s.destroy(), 1_000).unref();
    return;
  }
  s.destroy();
}
