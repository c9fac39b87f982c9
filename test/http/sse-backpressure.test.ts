/**
 * An SSE reply holds a bounded number of bytes for a client that does not read (util/sse-queue.ts):
 * a `tools/call` whose backend streams progress, a listen stream whose lists change, a 2024-11-05
 * `/sse` stream. Each queued every message for as long as the connection lasted (a slow reader of a
 * 1,000,000-step progress call held over 400 MB; two such readers took the gateway past 1 GB of RSS).
 */
import { describe, expect, it } from 'vitest';
import { Exchange } from '../../src/http/exchange.js';
import { listenResponse } from '../../src/http/listen-stream.js';
import { boundedSse, SSE_MAX_QUEUED_BYTES, sseQueue } from '../../src/util/sse-queue.js';
import { HttpSseServerTransport, SSE_MAX_UNREAD_BYTES } from '../../src/fronts/legacy/sse-transport.js';
import type { ListenSession } from '../../src/fronts/dialect.js';

const N = 100_000;

function dataLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

describe('SSE replies a client does not read', () => {
  it('a tools/call stream keeps the latest progress and the answer, not every notification', async () => {
    let finish!: (r: Record<string, unknown>) => void;
    const work = new Promise<Record<string, unknown>>((resolve) => (finish = resolve));
    const exchange = new Exchange(7, true, true, { abort: () => undefined });
    const res = await exchange.respond(work);
    const sink = exchange.sink!;
    // Nobody reads while the backend reports N steps and logs as many lines.
    for (let i = 1; i <= N; i++) {
      sink({ method: 'notifications/progress', params: { progressToken: 't', progress: i, total: N } });
      sink({ method: 'notifications/message', params: { level: 'info', data: `line ${i}` } });
    }
    finish({ resultType: 'complete', content: [] });
    const text = await res.text();
    expect(text.length).toBeLessThan(2 * SSE_MAX_QUEUED_BYTES);
    const messages = dataLines(text);
    expect(messages.at(-1)).toMatchObject({ id: 7, result: { resultType: 'complete' } });
    const progress = messages.filter((m) => m['method'] === 'notifications/progress');
    expect(progress.at(-1)).toMatchObject({ params: { progress: N } });
  });

  it('a reader that keeps up gets every notification', async () => {
    const q = sseQueue({ maxQueuedBytes: 64 });
    const reader = q.stream.getReader();
    const got: string[] = [];
    for (let i = 0; i < 100; i++) {
      q.may(new TextEncoder().encode(`m${i};`));
      got.push(new TextDecoder().decode((await reader.read()).value));
    }
    expect(got.join('')).toBe(Array.from({ length: 100 }, (_, i) => `m${i};`).join(''));
    expect(q.dropped).toBe(0);
  });

  it('a listen stream keeps the latest change of each kind', async () => {
    let send!: (m: unknown) => void;
    let end!: () => void;
    const session: ListenSession = {
      id: 1,
      ack: { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: {} },
      final: { jsonrpc: '2.0', id: 1, result: { resultType: 'complete' } },
      attach(s: (m: unknown) => void, e: () => void) {
        send = s;
        end = e;
        return () => undefined;
      },
    } as unknown as ListenSession;
    const res = listenResponse(session);
    for (let i = 0; i < N; i++) send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { n: i } });
    send({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed', params: {} });
    end();
    const text = await res.text();
    expect(text.length).toBeLessThan(2 * SSE_MAX_QUEUED_BYTES);
    const methods = dataLines(text).map((m) => m['method'] ?? 'final');
    expect(methods).toContain('notifications/prompts/list_changed');
    expect(methods.at(-1)).toBe('final');
  });

  it('a /sse stream whose client never reads its answers is cut off', async () => {
    const transport = new HttpSseServerTransport('/messages', 's1', 60_000);
    let closed = false;
    transport.onclose = () => (closed = true);
    const answer = { jsonrpc: '2.0' as const, id: 1, result: { content: [{ type: 'text', text: 'x'.repeat(10_000) }] } };
    for (let i = 0; i < (2 * SSE_MAX_UNREAD_BYTES) / 10_000 && !transport.closed; i++) await transport.send(answer);
    expect(closed).toBe(true);
    await expect(transport.stream.getReader().read()).rejects.toThrow(/unread/);
  });
});

describe('an SSE answer another component writes (the legacy route: the SDK transport)', () => {
  const event = (m: Record<string, unknown>): string => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
  const encoder = new TextEncoder();

  it('holds what the client leaves unread to the bound: the answer goes, progress as its latest, log lines dropped', async () => {
    let source!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (source = c) });
    const bounded = boundedSse(body);
    // The transport writes as fast as it likes (turns of the event loop between its writes, as a
    // backend's messages come); nobody reads meanwhile.
    for (let i = 1; i <= N; i++) {
      if (i % 1_000 === 0) await new Promise((r) => setImmediate(r));
      source.enqueue(encoder.encode(event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 3, progress: i } })));
      source.enqueue(encoder.encode(event({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `line ${i}` } })));
    }
    // An answer split across two chunks, as a transport may write it.
    const answer = event({ jsonrpc: '2.0', id: 9, result: { content: [] } });
    source.enqueue(encoder.encode(answer.slice(0, 20)));
    source.enqueue(encoder.encode(answer.slice(20)));
    source.close();
    const text = await new Response(bounded).text();
    expect(text.length).toBeLessThan(2 * SSE_MAX_QUEUED_BYTES);
    const messages = dataLines(text);
    expect(messages.at(-1)).toMatchObject({ id: 9, result: { content: [] } });
    expect(messages.filter((m) => m['method'] === 'notifications/progress').at(-1)).toMatchObject({ params: { progress: N } });
  });

  it('hands on every event to a reader that keeps up, as it came', async () => {
    const sent = Array.from({ length: 50 }, (_, i) => event({ jsonrpc: '2.0', method: 'notifications/message', params: { data: i } })).join('');
    const text = await new Response(boundedSse(new Response(sent).body!)).text();
    expect(text).toBe(sent);
  });
});

describe('what waits under a key', () => {
  it('is held to the bound too when keys keep coming new (a task id per task, a token per call): the oldest go', async () => {
    const queue = sseQueue();
    const encoder = new TextEncoder();
    for (let i = 0; i < N; i++) {
      const bytes = encoder.encode(
        `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks', params: { taskId: `t${i}`, status: 'working' } })}\n\n`,
      );
      queue.may(bytes, `task:${i}`);
    }
    // The stream's own queue (it takes one message past its mark) and what waits under keys, each about the bound.
    expect(queue.queuedBytes).toBeLessThanOrEqual(2 * SSE_MAX_QUEUED_BYTES + 1_024);
    expect(queue.dropped).toBeGreaterThan(0);
    queue.close();
    const text = await new Response(queue.stream).text();
    expect(text.length).toBeLessThanOrEqual(2 * SSE_MAX_QUEUED_BYTES + 1_024);
    // The newest are the ones kept.
    expect(dataLines(text).at(-1)).toMatchObject({ params: { taskId: `t${N - 1}` } });
  });
});
