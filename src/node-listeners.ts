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
