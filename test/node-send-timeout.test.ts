/**
 * The send deadline on real sockets: a node:http server answering 32 MiB in one write, far more than the
 * loopback's socket buffers hold (4 MiB for a sender, as Linux's default `tcp_wmem` allows), to raw
 * clients that stop reading, read slowly, or wait for an answer that comes late. The clients run in
 * this process: the deadlines of the cases that must not cut are far above a loaded machine's pauses.
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { cutStalledSends } from '../src/node-send-timeout.js';
import { until } from './helpers/until.js';

const BODY = 32 * 1024 * 1024;
let server: Server | undefined;
let client: Socket | undefined;
afterEach(async () => {
  client?.destroy();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = client = undefined;
});

/** A server whose every answer is `BODY` bytes in one write, after `lateMs`; its cuts counted. */
async function serve(ms: number, lateMs = 0): Promise<{ port: number; cuts: () => number }> {
  let cuts = 0;
  const s = createServer((_req, res) => {
    setTimeout(() => res.end(Buffer.alloc(BODY, 'x')), lateMs);
  });
  server = s;
  cutStalledSends(s, ms, () => cuts++);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const address = s.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { port: address.port, cuts: () => cuts };
}

/** A raw client that sent one GET; paused (it reads nothing until resumed). */
function paused(port: number): Socket {
  const socket = connect(port, '127.0.0.1');
  socket.pause();
  socket.on('error', () => undefined);
  socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  client = socket;
  return socket;
}

/** Everything `socket` receives from now until it closes. */
function readToClose(socket: Socket): Promise<number> {
  let bytes = 0;
  socket.on('data', (d: Buffer) => (bytes += d.length));
  return new Promise((resolve) => socket.on('close', () => resolve(bytes)));
}

describe('cutStalledSends', () => {
  it('closes a connection whose client stops reading: it gets what the system had taken, not the rest', async () => {
    const { port, cuts } = await serve(300);
    const socket = paused(port);
    await until('the stalled connection to be cut', () => cuts() === 1);
    const got = readToClose(socket);
    socket.resume();
    expect(await got).toBeLessThan(BODY);
    expect(cuts()).toBe(1);
  });

  it('never cuts a client that reads slowly: a large write taken a little at a time is progress', async () => {
    // Far slower than the socket buffers fill, but never still for the deadline (bursts 50 ms apart): at
    // 256 KiB a burst the body takes about 6 s, several deadlines, so a deadline that counted only whole
    // writes as progress would cut it.
    const { port, cuts } = await serve(1_500);
    const socket = paused(port);
    let bytes = 0;
    let burst = 0;
    socket.on('data', (d: Buffer) => {
      bytes += d.length;
      burst += d.length;
      if (burst >= 256 * 1024) socket.pause();
    });
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    const pacer = setInterval(() => {
      burst = 0;
      socket.resume();
    }, 50);
    await closed.finally(() => clearInterval(pacer));
    expect(bytes).toBeGreaterThan(BODY);
    expect(cuts()).toBe(0);
  });

  it('never cuts a connection with nothing waiting: an answer later than the deadline arrives whole', async () => {
    const { port, cuts } = await serve(1_000, 2_000);
    const socket = paused(port);
    const got = readToClose(socket);
    socket.resume();
    expect(await got).toBeGreaterThan(BODY);
    expect(cuts()).toBe(0);
  });

  it('stops watching when the server closes, and when told to', async () => {
    const s = createServer();
    const stop = cutStalledSends(s, 1_000, () => undefined);
    expect(s.listenerCount('connection')).toBe(2); // node:http's own, and this one
    stop();
    expect(s.listenerCount('connection')).toBe(1);
    cutStalledSends(s, 1_000, () => undefined);
    s.emit('close');
    expect(s.listenerCount('connection')).toBe(1);
  });
});
