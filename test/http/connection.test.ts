/**
 * An answer's lifeline (http/connection.ts) over a real socket with @hono/node-server's bindings:
 * ended when the client closes its connection before the answer was written, never once the answer
 * was written whole; without those bindings (the edge), linked to the request's signal.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnNode, type ListeningHandler } from '../helpers/node-listener.js';
import { answerLifeOf, type AnswerLife } from '../../src/http/connection.js';
import { createDeferred } from '../../src/util/deferred.js';

let served: ListeningHandler;
let port: number;
/** The lifeline of the latest request, and how to let its answer go out. */
let latest = createDeferred<{ life: AnswerLife; answer: () => void }>();

beforeAll(async () => {
  served = await listenOnNode(async (req, env) => {
    const lifeOf = answerLifeOf(env, req);
    const life = lifeOf();
    expect(lifeOf()).toBe(life); // made once per answer, whoever asks (a forward that fell back, then the work served here)
    const answered = createDeferred<void>();
    latest.resolve({ life, answer: () => answered.resolve() });
    await answered.promise;
    return new Response('{}', { headers: { 'content-type': 'application/json' } });
  });
  port = served.port;
});
afterAll(() => served.close());

/** Sends a POST on a raw socket; resolves with the socket once the handler holds the request. */
async function held(): Promise<{ socket: ReturnType<typeof connect>; life: AnswerLife; answer: () => void }> {
  latest = createDeferred();
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`);
  return { socket, ...(await latest.promise) };
}

const aborted = (life: AnswerLife): Promise<unknown> => new Promise((resolve) => life.life.addEventListener('abort', () => resolve(life.life.reason)));

describe('answerLifeOf on Node', () => {
  it('aborts the answer when the client closes the connection first', async () => {
    const { socket, life, answer } = await held();
    const gone = aborted(life);
    socket.destroy();
    expect(await gone).toBe('Client connection prematurely closed.');
    // Its AbortSignal, made after the end, says the same.
    expect(life.life.signal.reason).toBe('Client connection prematurely closed.');
    answer();
  });

  it('does not abort an answer that was written whole', async () => {
    const { socket, life, answer } = await held();
    const data = new Promise<string>((resolve) => socket.once('data', (d) => resolve(String(d))));
    answer();
    expect(await data).toMatch(/^HTTP\/1.1 200/);
    socket.destroy();
    await new Promise((r) => socket.once('close', r));
    await new Promise((r) => setImmediate(r));
    expect(life.life.aborted).toBe(false);
    expect(life.life.signal.aborted).toBe(false);
  });
});

describe('answerLifeOf without Node bindings', () => {
  it('links the lifeline to the request signal', () => {
    const client = new AbortController();
    const lifeOf = answerLifeOf(undefined, new Request('http://127.0.0.1/mcp', { signal: client.signal }));
    const life = lifeOf();
    expect(lifeOf()).toBe(life);
    const signal = life.life.signal; // made before the end: aborted with it
    expect(life.life.aborted).toBe(false);
    client.abort('gone');
    expect(life.life.reason).toBe('gone');
    expect(signal.reason).toBe('gone');
    life.dispose();
  });

  it('lets go of the request signal once disposed', () => {
    const client = new AbortController();
    const life = answerLifeOf(undefined, new Request('http://127.0.0.1/mcp', { signal: client.signal }))();
    life.dispose();
    client.abort('late');
    expect(life.life.aborted).toBe(false);
  });
});
