import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeForwardTransport, type NodeForwardTransport } from '../../src/gateway/forward-transport.js';

let server: Server | undefined;
let transport: NodeForwardTransport | undefined;

/** An owner on 127.0.0.1 that answers every request with `answer`. */
async function owner(answer: (res: ServerResponse) => void): Promise<URL> {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/_cluster/forward`);
}

const post = (signal = new AbortController().signal) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: '{"jsonrpc":"2.0","id":7,"method":"tools/call"}',
  signal,
});

afterEach(async () => {
  transport?.close();
  server?.closeAllConnections();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

describe('forward transport', () => {
  it('hands a JSON answer on whole, with its status and headers', async () => {
    const url = await owner((res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's' }).end('{"jsonrpc":"2.0","id":1,"result":{}}'),
    );
    transport = createNodeForwardTransport(() => undefined);
    const answer = await transport.send(url, post());
    expect(answer).toMatchObject({ status: 200, body: '{"jsonrpc":"2.0","id":1,"result":{}}' });
    expect(answer.headers.get('mcp-session-id')).toBe('s');
  });

  it('streams any other answer as it comes', async () => {
    const url = await owner((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      setImmediate(() => res.end('data: two\n\n'));
    });
    transport = createNodeForwardTransport(() => undefined);
    const answer = await transport.send(url, post());
    expect(typeof answer.body).not.toBe('string');
    expect(await new Response(answer.body).text()).toBe('data: one\n\ndata: two\n\n');
  });

  it('tells the client a JSON answer was cut after its head, never rejects then (no second serve)', async () => {
    const url = await owner((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"jsonrpc":"2.0",');
      setImmediate(() => res.socket?.destroy());
    });
    const cuts: string[] = [];
    transport = createNodeForwardTransport((e) => cuts.push(e.message));
    const answer = await transport.send(url, post());
    expect(JSON.parse(answer.body as string)).toMatchObject({ id: 7, error: { code: -32603, data: { reason: 'forward_cut' } } });
    expect(cuts).toHaveLength(1);
  });

  it('tells the client its answer was cut when the owner took the request and went away before answering', async () => {
    const url = await owner((res) => res.socket?.destroy());
    const cuts: string[] = [];
    transport = createNodeForwardTransport((e) => cuts.push(e.message));
    const answer = await transport.send(url, post());
    expect(JSON.parse(answer.body as string)).toMatchObject({ jsonrpc: '2.0', id: 7, error: { data: { reason: 'forward_cut' } } });
    expect(cuts).toHaveLength(1);
  });

  it('rejects when the owner cannot be reached (the request is then served where it arrived)', async () => {
    const url = await owner((res) => res.end());
    server!.close();
    server!.closeAllConnections();
    await new Promise((r) => server!.once('close', r));
    server = undefined;
    transport = createNodeForwardTransport(() => undefined);
    await expect(transport.send(url, post())).rejects.toThrow();
  });

  it('answers gateway_closing for a forward in flight when it closes, and never sends it again (a reset on a reused connection would)', async () => {
    let requests = 0;
    const url = await owner((res) => {
      requests++;
      if (requests === 1) res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
      // The second is held: it is in flight, on the connection the first left idle, when the transport closes.
    });
    transport = createNodeForwardTransport(() => undefined);
    await transport.send(url, post());
    const sent = transport.send(url, post());
    await new Promise((r) => server!.once('request', r));
    transport.close();
    const answer = await sent;
    expect(JSON.parse(answer.body as string)).toMatchObject({ id: 7, error: { code: -32603, data: { reason: 'gateway_closing' } } });
    // Nothing was sent a second time (the owner saw two requests in all, never a copy of the second).
    await new Promise((r) => setImmediate(r));
    expect(requests).toBe(2);
  });

  it('answers gateway_closing for a forward whose JSON answer was on its way when it closes (not forward_cut)', async () => {
    const cut: Error[] = [];
    const url = await owner((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"jsonrpc":"2.0","id":7,'); // half of it
    });
    transport = createNodeForwardTransport((e) => cut.push(e));
    const sent = transport.send(url, post());
    await new Promise((r) => server!.once('request', r));
    await new Promise((r) => setTimeout(r, 50)); // the head and half the body have arrived
    transport.close();
    expect(JSON.parse((await sent).body as string)).toMatchObject({ id: 7, error: { data: { reason: 'gateway_closing' } } });
    expect(cut).toEqual([]);
  });

  it('ends a forward whose client went away', async () => {
    let ownerSawEnd!: () => void;
    const ended = new Promise<void>((r) => (ownerSawEnd = r));
    const url = await owner((res) => res.on('close', ownerSawEnd)); // never answers
    transport = createNodeForwardTransport(() => undefined);
    const client = new AbortController();
    const sent = transport.send(url, post(client.signal));
    await new Promise((r) => server!.once('request', r));
    client.abort(new Error('client went away'));
    await expect(sent).rejects.toThrow();
    await ended; // the owner saw its connection end
  });
});
