/**
 * A handler served the way the Node gateway serves its app: @hono/node-server's request listener on a
 * real `node:http` server on 127.0.0.1, so a test sees the adapter's own Request (and its bindings).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';

export interface ListeningHandler {
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `handle` on a free port of 127.0.0.1; `close()` ends every connection and the server. */
export async function listenOnNode(handle: (req: Request, env: unknown) => Promise<Response>): Promise<ListeningHandler> {
  const listener = getRequestListener(handle);
  const server = createServer((req, res) => {
    listener(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
