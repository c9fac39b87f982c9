/**
 * A call's answer stream joining the SDK transport's own bookkeeping (src/fronts/legacy/answer-stream.ts),
 * against the real `WebStandardStreamableHTTPServerTransport` of an initialized session with its event
 * store: what the stream carries, and that nothing of it stays in the transport's maps once it is done,
 * whichever way it ends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Server, WebStandardStreamableHTTPServerTransport, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { openAnswerStream, streamingTransport, type StreamingTransport } from '../../../src/fronts/legacy/answer-stream.js';
import { SessionEventStore } from '../../../src/fronts/legacy/event-store.js';

const SESSION = 'i~answer-stream';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let open: { server: Server; transport: WebStandardStreamableHTTPServerTransport }[] = [];

afterEach(async () => {
  for (const { server, transport } of open) {
    await transport.close();
    await server.close();
  }
  open = [];
});

/** An initialized 2025-11-25 session: the SDK transport (with an event store) and its server. */
async function session(): Promise<{ transport: WebStandardStreamableHTTPServerTransport; t: StreamingTransport; events: SessionEventStore }> {
  const events = new SessionEventStore();
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => SESSION, eventStore: events });
  const server = new Server({ name: 'test', version: '1.0.0' }, { capabilities: { tools: {} } });
  await server.connect(transport);
  open.push({ server, transport });
  const init = await transport.handleRequest(
    new Request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      }),
    }),
  );
  await init.text();
  const t = streamingTransport(transport);
  if (!t) throw new Error("the SDK transport's bookkeeping is not where answer-stream.ts looks for it");
  return { transport, t, events };
}

const answer = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `answer ${id}` }] } });

/** Reads `body` to its end; its SSE events as [id, data] pairs (comments and blank lines left out). */
async function eventsOf(body: ReadableStream<Uint8Array>): Promise<[string | undefined, string][]> {
  const text = await new Response(body).text();
  return text
    .split('\n\n')
    .filter((block) => block.includes('data:'))
    .map((block) => {
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const data = /^data: ?(.*)$/m.exec(block)?.[1] ?? '';
      return [id, data];
    });
}

describe('a call answered on a stream of the SDK transport', () => {
  it('carries a priming event, then the answer, and ends; the transport keeps nothing of it but the stored events', async () => {
    const { t, events } = await session();
    const before = t._streamMapping.size;
    const stream = await openAnswerStream(t, 7, SESSION, '2025-11-25');
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream');
    expect(stream.response.headers.get('mcp-session-id')).toBe(SESSION);
    await stream.deliver(answer(7));
    const got = await eventsOf(stream.response.body!);
    expect(got.map(([, data]) => data)).toEqual(['', JSON.stringify(answer(7))]);
    expect(got.every(([id]) => id !== undefined)).toBe(true); // both resumable
    expect(t._requestToStreamMapping.has(7)).toBe(false);
    expect(t._streamMapping.size).toBe(before);
    expect(await events.getStreamIdForEventId(got[1]![0]!)).toBeDefined();
  });

  it('keeps the answer for a client that resumes when the stream was dropped first, and lets go of it', async () => {
    const { t, events } = await session();
    const before = t._streamMapping.size;
    const stream = await openAnswerStream(t, 8, SESSION, '2025-11-25');
    const reader = stream.response.body!.getReader();
    const priming = new TextDecoder().decode((await reader.read()).value);
    const primingId = /^id: (.*)$/m.exec(priming)![1]!;
    await reader.cancel(); // the client went away
    expect(t._streamMapping.size).toBe(before);
    await stream.deliver(answer(8));
    expect(t._requestToStreamMapping.has(8)).toBe(false);
    const replayed: JSONRPCMessage[] = [];
    await events.replayEventsAfter(primingId, { send: async (_id, message) => void replayed.push(message) });
    expect(replayed).toEqual([answer(8)]);
  });

  it('routes nothing more to the stream of a cancelled call, and leaves a later request with the same id alone', async () => {
    const { t, transport } = await session();
    const first = await openAnswerStream(t, 9, SESSION, '2025-11-25');
    const reader = first.response.body!.getReader();
    await reader.read(); // priming
    // A later request with the same id, routed to a stream of its own (as the SDK routes one it serves).
    t._requestToStreamMapping.set(9, 'later-stream');
    await first.deliver(undefined);
    expect(t._requestToStreamMapping.get(9)).toBe('later-stream');
    t._requestToStreamMapping.delete(9);
    // The cancelled call's stream stays open, as the SDK leaves its own, until the session ends.
    const pending = reader.read();
    await transport.close();
    expect((await pending).done).toBe(true);
  });

  it('ends the stream and lets go of its routing when the answer cannot be sent', async () => {
    const { t } = await session();
    const before = t._streamMapping.size;
    const stream = await openAnswerStream(t, 10, SESSION, '2025-11-25');
    const failing: StreamingTransport = Object.assign(Object.create(t) as StreamingTransport, {
      send: () => Promise.reject(new Error('transport gone')),
    });
    const broken = await openAnswerStream(failing, 11, SESSION, '2025-11-25');
    await expect(broken.deliver(answer(11))).rejects.toThrow('transport gone');
    expect(t._requestToStreamMapping.has(11)).toBe(false);
    expect(await eventsOf(broken.response.body!)).toEqual([[expect.any(String), '']]);
    await stream.deliver(answer(10));
    await eventsOf(stream.response.body!);
    expect(t._streamMapping.size).toBe(before);
  });
});
