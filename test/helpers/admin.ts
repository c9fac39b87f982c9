/** The admin listener of a test gateway, served as main.ts serves it: its own HTTP server on 127.0.0.1, port 0. */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { RunningGateway } from './gateway.js';

export interface RunningAdmin {
  readonly url: string;
  close(): Promise<void>;
}

export async function serveAdmin(gw: RunningGateway): Promise<RunningAdmin> {
  const surface = gw.gateway.admin;
  if (!surface) throw new Error('the gateway has no admin listener: configure gateway.admin');
  const server = serve({ fetch: surface.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => server.once('listening', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
