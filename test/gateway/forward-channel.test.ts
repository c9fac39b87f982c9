/**
 * The forwarding end of a channel (gateway/forward-channel.ts) against an owner of this test's own, on
 * real TCP on 127.0.0.1: a streamed answer comes within the call's credit, which is given back only as
 * the answer's reader reads (a client that reads nothing holds back its own call: the owner can send
 * no more than STREAM_WINDOW ahead of it); and a call written on a channel that then closes is
 * answered `forward_cut` there, counted as cut.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FrameReader, FrameWriter, SALT_HEADER, STREAM_WINDOW, channelKey, type Frame } from '../../src/cluster/channel-frames.js';
import { NONCE } from '../../src/cluster/forward-signing.js';
import { createForwardChannels, type ForwardChannels } from '../../src/gateway/forward-channel.js';
import { Lifeline } from '../../src/util/lifeline.js';
import { until } from '../helpers/until.js';

const PIECE = 256 * 1024;
let server: Server | undefined;
let channels: ForwardChannels | undefined;
const opened: Socket[] = [];
afterEach(async () => {
  channels?.close();
  for (const socket of opened.splice(0)) socket.destroy();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
});

/** An owner that answers each call with `pieces` pieces of a stream, sending only within the call's credit (with `answers` false, nothing). */
async function streamingOwner(pieces: number, answers = true): Promise<{ url: string; sent: () => number; sockets: Socket[] }> {
  let sent = 0;
  const sockets = opened;
  server = createServer();
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    sockets.push(socket);
    const salt = 'salt';
    const key = channelKey('s', String(req.headers[NONCE]), salt);
    socket.write(`HTTP/1.1 200 OK\r\n${SALT_HEADER}: ${salt}\r\n\r\n`);
    const writer = new FrameWriter(key, 'owner');
    const reader = new FrameReader(key, 'forwarder', 1 << 20);
    let credit = 0;
    let left = pieces;
    let call = 0;
    const pump = (): void => {
      while (credit > 0 && left > 0) {
        socket.write(writer.frame({ k: 'data', i: call }, Buffer.alloc(PIECE, 120)));
        credit -= PIECE;
        sent += PIECE;
        if (--left === 0) socket.write(writer.frame({ k: 'end', i: call }));
      }
    };
    socket.on('data', (chunk: Buffer) => {
      for (const { head } of reader.push(chunk) as Frame[]) {
        if (head['k'] === 'call' && answers) {
          call = head['i'] as number;
          credit = STREAM_WINDOW;
          socket.write(writer.frame({ k: 'head', i: call, s: 200, h: { 'content-type': 'text/event-stream' } }));
        }
        if (head['k'] === 'more') credit += head['n'] as number;
        pump();
      }
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent: () => sent, sockets };
}

function channelsTo(url: string, cuts: Error[] = []): ForwardChannels {
  channels = createForwardChannels({
    secret: 's',
    urlOf: async () => url,
    head: () => ({ headers: { [NONCE]: 'n1' }, nonce: 'n1', signedFor: undefined }),
    heard: () => undefined,
    onCut: (e) => void cuts.push(e),
  });
  return channels;
}

const call = { path: '/mcp', principal: 'p', scopes: undefined, headers: {}, body: '{"jsonrpc":"2.0","id":5,"method":"tools/call"}' };

describe('the forwarding end of a channel', () => {
  it('gives the owner credit for a streamed answer only as its reader reads', async () => {
    const owner = await streamingOwner(12);
    const answer = await channelsTo(owner.url).send('a', call, new Lifeline());
    const body = answer!.body as ReadableStream<Uint8Array>;
    await until('the first window to arrive', () => owner.sent() >= STREAM_WINDOW);
    // Nothing read: the owner has no credit past its window, however long it waits.
    await new Promise((r) => setTimeout(r, 200));
    expect(owner.sent()).toBe(STREAM_WINDOW);
    let read = 0;
    const reader = body.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) read += r.value.length;
    expect(read).toBe(12 * PIECE);
  });

  it('answers forward_cut for a call on its way when the channel closes, marked as made here', async () => {
    const owner = await streamingOwner(0, false);
    const cuts: Error[] = [];
    const waiting = channelsTo(owner.url, cuts).send('a', { ...call, body: '{"jsonrpc":"2.0","id":6,"method":"tools/call"}' }, new Lifeline());
    await until('the channel to open', () => owner.sockets.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    owner.sockets[0]!.destroy();
    const answer = await waiting;
    expect(answer).toMatchObject({ cut: true });
    expect(JSON.parse(String(answer!.body))).toMatchObject({ id: 6, error: { code: -32603, data: { reason: 'forward_cut' } } });
    expect(cuts.length).toBeGreaterThan(0);
  });

  it('tries an owner that answered its CONNECT 503 (starting) again after the Retry-After, not 30 s', async () => {
    server = createServer();
    let connects = 0;
    server.on('connect', (_req: IncomingMessage, socket: Socket) => {
      connects++;
      socket.end('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const unavailable: number[] = [];
    channels = createForwardChannels({
      secret: 's',
      urlOf: async () => `http://127.0.0.1:${(server!.address() as AddressInfo).port}`,
      head: () => ({ headers: { [NONCE]: 'n1' }, nonce: 'n1', signedFor: undefined }),
      heard: () => undefined,
      onCut: () => undefined,
      onUnavailable: (_owner, _why, forMs) => void unavailable.push(forMs),
    });
    expect(await channels.send('a', call, new Lifeline())).toBeUndefined(); // over HTTP meanwhile
    expect(unavailable).toEqual([1_000]);
    expect(connects).toBe(1);
  });
});
