/**
 * The body limit on both read paths: a declared Content-Length read in one piece (over a real socket,
 * @hono/node-server's request) and a chunked body cut off while it streams; a body shorter than
 * declared, or not UTF-8, is unreadable, never a hang.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnNode, type ListeningHandler } from '../helpers/node-listener.js';
import { readBodyLimited, type BodyRead } from '../../src/http/body.js';
import { notJson } from '../../src/http/request-body.js';

const LIMIT = 1024;
let served: ListeningHandler;
let port: number;
const reads: BodyRead[] = [];

beforeAll(async () => {
  served = await listenOnNode(async (req) => {
    const read = await readBodyLimited(req, LIMIT);
    reads.push(read);
    return new Response(JSON.stringify(read), { headers: { 'content-type': 'application/json' } });
  });
  port = served.port;
});
afterAll(() => served.close());

const post = async (body: BodyInit, headers: Record<string, string> = {}): Promise<BodyRead> =>
  (await (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body, headers, duplex: 'half' } as RequestInit)).json()) as BodyRead;

describe('readBodyLimited', () => {
  it('reads a body of declared length, multi-byte characters included', async () => {
    expect(await post('{"a":"é€"}')).toEqual({ ok: true, text: '{"a":"é€"}' });
  });

  it('refuses a declared length over the limit', async () => {
    expect(await post('x'.repeat(LIMIT + 1))).toEqual({ ok: false, reason: 'too_large' });
  });

  it('counts bytes, not characters', async () => {
    expect(await post('é'.repeat(LIMIT / 2 + 1))).toEqual({ ok: false, reason: 'too_large' });
  });

  it('refuses a declared body that is not UTF-8', async () => {
    expect(await post(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))).toEqual({ ok: false, reason: 'unreadable' });
  });

  it('cuts a chunked body off at the limit', async () => {
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (pulled > 64 * LIMIT) return c.close();
        pulled += 256;
        c.enqueue(new Uint8Array(256).fill(0x20));
      },
    });
    expect(await post(body)).toEqual({ ok: false, reason: 'too_large' });
  });

  it('finds a body shorter than declared unreadable when the client leaves', async () => {
    const before = reads.length;
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"short":`);
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    for (let i = 0; i < 100 && reads.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(reads[before]).toEqual({ ok: false, reason: 'unreadable' });
  });

  it('reads a Request made in process, with or without a declared length', async () => {
    const url = 'http://127.0.0.1/';
    expect(await readBodyLimited(new Request(url, { method: 'POST', body: 'abc', headers: { 'content-length': '3' } }), LIMIT)).toEqual({
      ok: true,
      text: 'abc',
    });
    expect(await readBodyLimited(new Request(url, { method: 'POST', body: 'abc' }), LIMIT)).toEqual({ ok: true, text: 'abc' });
    expect(await readBodyLimited(new Request(url, { method: 'GET' }), LIMIT)).toEqual({ ok: true, text: '' });
  });
});

describe('notJson', () => {
  const withType = (type: string | null) => ({ headers: { get: (name: string) => (name === 'content-type' ? type : null) } });

  it('takes application/json, with parameters and in any case, and refuses any other media type that merely names it (415)', () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON ;charset=UTF-8'])
      expect(notJson(withType(type))).toBeUndefined();
    for (const type of ['text/html; x=application/json', 'text/plain', 'application/jsonx', null]) expect(notJson(withType(type))?.status).toBe(415);
  });
});
