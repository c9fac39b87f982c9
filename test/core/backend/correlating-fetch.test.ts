import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { CALL_ID_META, RELATED_CALL_META, createCorrelatingFetch } from '../../../src/core/backend/correlating-fetch.js';

describe('correlating fetch', () => {
  it('strips the call id from the request and tags requests and notifications on the SSE reply', async () => {
    let sentBody = '';
    const sse = [
      'event: message',
      `data: ${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'elicitation/create', params: { message: 'x' } })}`,
      '',
      `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}`,
      '',
      `data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} })}`,
      '',
      '',
    ].join('\n');
    const inner = async (_u: string | URL, init?: RequestInit): Promise<Response> => {
      sentBody = String(init?.body);
      // deliver in awkward chunks
      const bytes = new TextEncoder().encode(sse);
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes.length; i += 17) c.enqueue(bytes.slice(i, i + 17));
          c.close();
        },
      });
      return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
    };
    const f = createCorrelatingFetch(inner);
    const res = await f('http://x', {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', _meta: { [CALL_ID_META]: 'call-1' } } }),
    });
    expect(JSON.parse(sentBody)).toEqual({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't' } });
    const lines = (await res.text())
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5)));
    expect(lines[0].params._meta[RELATED_CALL_META]).toBe('call-1');
    expect(lines[1].params._meta[RELATED_CALL_META]).toBe('call-1');
    expect(lines[2]).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it('passes untagged requests through untouched', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    let seen: unknown;
    const f = createCorrelatingFetch(async (_u, init) => {
      seen = init?.body;
      return new Response('{}', { headers: { 'content-type': 'application/json' } });
    });
    await f('http://x', { method: 'POST', body });
    expect(seen).toBe(body);
  });

  it("reports a call whose response stream ends or breaks before the call's response", async () => {
    const lost: string[] = [];
    const body = (id: string) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', _meta: { [CALL_ID_META]: id } } });
    const sse = (text: string, fail = false) =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode(text));
            if (fail) c.error(new Error('socket hang up'));
            else c.close();
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      );
    const progress = `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`;
    const done = `data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} })}\n\n`;
    const replies: Record<string, Response> = { ok: sse(progress + done), ended: sse(progress), broken: sse(progress, true) };
    let lastId = '';
    const f = createCorrelatingFetch(
      async () => replies[lastId]!,
      (id) => lost.push(id),
    );
    for (const id of ['ok', 'ended', 'broken']) {
      lastId = id;
      const res = await f('http://x', { method: 'POST', body: body(id) });
      await res.text().catch(() => undefined);
    }
    expect(lost).toEqual(['ended', 'broken']);
  });

  it('removes a call tag a backend put on a message itself, on streams that belong to no call', async () => {
    const forged = `data: ${JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'elicitation/create', params: { message: 'x', _meta: { [RELATED_CALL_META]: 'someone-else' } } })}\n\n`;
    const f = createCorrelatingFetch(async () => new Response(forged, { headers: { 'content-type': 'text/event-stream' } }));
    const text = await (await f('http://x', { method: 'GET' })).text();
    const msg = JSON.parse(text.split('\n')[0]!.slice(5)) as { params: { _meta?: Record<string, unknown> } };
    expect(msg.params._meta?.[RELATED_CALL_META]).toBeUndefined();
  });

  it("leaves no listener on the transport's long-lived signal once an exchange is over", async () => {
    const shared = new AbortController().signal;
    const sse = `data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} })}\n\n`;
    const f = createCorrelatingFetch(async (_u, init) => {
      // what fetch does: keep a listener on the signal it is given
      init?.signal?.addEventListener('abort', () => undefined);
      const json = String(init?.body).includes('"json"');
      return new Response(json ? '{}' : sse, { headers: { 'content-type': json ? 'application/json' : 'text/event-stream' } });
    });
    for (let i = 0; i < 50; i++) {
      const kind = i % 2 ? 'json' : 'sse';
      const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: kind, _meta: { [CALL_ID_META]: `c${i}` } } });
      await (await f('http://x', { method: 'POST', body, signal: shared })).text();
    }
    expect(getEventListeners(shared, 'abort')).toHaveLength(0);
  });
});
