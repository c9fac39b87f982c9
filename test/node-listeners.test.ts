/**
 * The listeners the entry point opens before the gateway starts: until served, a request gets 503 with
 * Retry-After and a CONNECT a 503; served, requests reach the gateway, and outside a cluster (no
 * CONNECT listener given) a CONNECT is closed unanswered, as Node does with no listener at all.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { limitConnections, listenEarly, type EarlyServer } from '../src/node-listeners.js';
import { until } from './helpers/until.js';

/** What the server answers a raw `CONNECT` with, up to its closing the connection. */
function connectRaw(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('CONNECT /_cluster/channel HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString()));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

async function early(): Promise<EarlyServer> {
  const server = await listenEarly('127.0.0.1', 0, {});
  if (!('serve' in server)) throw server;
  return server;
}

describe('listenEarly', () => {
  it('answers 503 with Retry-After, and a CONNECT with 503, until the gateway is served', async () => {
    const server = await early();
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/mcp`, { method: 'POST', body: '{}' });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
      expect(await connectRaw(server.port)).toMatch(/^HTTP\/1\.1 503 .*\r\nRetry-After: 1\r\n/);
    } finally {
      await server.close();
    }
  });

  it('hands requests to the gateway once served; without a CONNECT listener a CONNECT is closed unanswered', async () => {
    const server = await early();
    try {
      server.serve(() => new Response('served'));
      const res = await fetch(`http://127.0.0.1:${server.port}/mcp`);
      expect(await res.text()).toBe('served');
      expect(await connectRaw(server.port)).toBe('');
    } finally {
      await server.close();
    }
  });

  it('says why it cannot listen', async () => {
    const first = await early();
    try {
      const second = await listenEarly('127.0.0.1', first.port, {});
      expect('serve' in second ? 'listening' : second.code).toBe('EADDRINUSE');
    } finally {
      await first.close();
    }
  });
});

describe('limitConnections', () => {
  it('closes a connection past the bound as it comes, tells of it, and keeps serving the ones it holds', async () => {
    const server = await early();
    const sockets: Socket[] = [];
    try {
      let dropped = 0;
      limitConnections(server.server, 2, () => dropped++);
      const open = (): Promise<Socket> =>
        new Promise((resolve, reject) => {
          const socket = connect(server.port, '127.0.0.1', () => resolve(socket));
          socket.on('error', reject);
          sockets.push(socket);
        });
      await open();
      await open();
      // Held: the server has both before the third comes (its count is of connections it accepted).
      await until('the server to hold two connections', async () => (await count(server)) === 2);
      const third = await open();
      const closed = await new Promise<string>((resolve) => {
        let got = '';
        third.on('data', (d: Buffer) => (got += d.toString()));
        third.on('close', () => resolve(got));
        third.on('error', () => undefined);
      });
      expect(closed).toBe('');
      expect(dropped).toBe(1);
      // A held one is still served.
      const first = sockets[0]!;
      const answer = new Promise<string>((resolve) => first.once('data', (d: Buffer) => resolve(d.toString())));
      first.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      expect(await answer).toMatch(/^HTTP\/1\.1 503/);
    } finally {
      for (const s of sockets) s.destroy();
      await server.close();
    }
  });
});

/** The connections `server` holds now. */
function count(server: EarlyServer): Promise<number> {
  return new Promise((resolve, reject) => server.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
}

describe("Node's answer to a request it cannot take", () => {
  it('is a JSON-RPC error, on a keep-alive connection that carried an answer before too', async () => {
    const server = await listenEarly('127.0.0.1', 0, { requestTimeout: 1_000, headersTimeout: 1_000, connectionsCheckingInterval: 100 });
    if (!('serve' in server)) throw server;
    // It reads each body whole before it answers.
    server.serve(async (req) => new Response(`read ${(await req.text()).length}`));
    const socket = connect(server.port, '127.0.0.1');
    try {
      let got = '';
      socket.on('data', (d: Buffer) => (got += d.toString()));
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await until('the first answer', () => got.includes('read 0'));
      // The second request's body never comes.
      socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
      await until('the connection to end', () => socket.destroyed || socket.readableEnded, 10_000);
      const at = got.indexOf('HTTP/1.1 408 ');
      expect(at, got).toBeGreaterThan(0);
      const second = got.slice(at);
      expect(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4))).toMatchObject({ id: null, error: { code: -32600 } });
    } finally {
      socket.destroy();
      await server.close();
    }
  });
});
