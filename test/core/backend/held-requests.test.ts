/** Unit tests of the session-level requests a backend made outside any call (core/backend/held-requests.ts), with in-memory calls. */
import { describe, expect, it } from 'vitest';
import { HeldRequests } from '../../../src/core/backend/held-requests.js';
import { BackendRequestRefused, CALL_ENDED, type CallChannel } from '../../../src/core/backend/port.js';

const ROOTS = { roots: [{ uri: 'file:///work' }] };

/** A call that answers each request with `answer` (or refuses it as one whose call ended), noting what it was asked. */
function callAnswering(id: string, answer: 'roots' | 'ended') {
  const asked: string[] = [];
  const run = {
    id,
    requestInput: async (method: string) => {
      asked.push(method);
      if (answer === 'ended') throw new BackendRequestRefused(-32603, CALL_ENDED);
      return ROOTS;
    },
  } as unknown as CallChannel;
  return { run, asked };
}

describe('HeldRequests', () => {
  it('holds a request for the next call, which answers it before its own request goes out (askedFirst, taken once)', async () => {
    const held = new HeldRequests({ closed: () => false, otherThan: () => undefined });
    const answer = held.hold('roots/list', {}, new AbortController().signal, undefined);
    const { run, asked } = callAnswering('c1', 'roots');
    held.handTo(run);
    await expect(answer).resolves.toEqual(ROOTS);
    expect(asked).toEqual(['roots/list']);
    await expect(held.askedFirst(run)).resolves.toBeUndefined();
    expect(held.askedFirst(run)).toBeUndefined();
  });

  it('holds it again when the call it was handed ends unanswered, and asks another call in flight at once', async () => {
    const ended = callAnswering('c1', 'ended');
    const other = callAnswering('c2', 'roots');
    const held = new HeldRequests({ closed: () => false, otherThan: (run) => (run === ended.run ? other.run : undefined) });
    const answer = held.hold('roots/list', {}, new AbortController().signal, ended.run);
    await expect(answer).resolves.toEqual(ROOTS);
    expect([ended.asked, other.asked]).toEqual([['roots/list'], ['roots/list']]);
  });

  it('drops a request the backend withdrew, and fails what is still held when the session closes', async () => {
    const held = new HeldRequests({ closed: () => false, otherThan: () => undefined });
    const withdrawn = new AbortController();
    const gone = held.hold('roots/list', {}, withdrawn.signal, undefined);
    gone.catch(() => undefined);
    withdrawn.abort();
    const kept = held.hold('roots/list', {}, new AbortController().signal, undefined);
    const { run, asked } = callAnswering('c1', 'roots');
    held.handTo(run);
    await expect(kept).resolves.toEqual(ROOTS);
    expect(asked).toEqual(['roots/list']); // the withdrawn one was not asked
    const last = held.hold('roots/list', {}, new AbortController().signal, undefined);
    held.rejectAll(new Error('The session closed'));
    await expect(last).rejects.toThrow('The session closed');
  });

  it("passes a client's refusal on to the backend as its error, bare, and any other failure as an internal error", async () => {
    const held = new HeldRequests({ closed: () => false, otherThan: () => undefined });
    const refusing = {
      id: 'c1',
      requestInput: () => Promise.reject(new BackendRequestRefused(-32602, 'MCP error -32602: no roots here', { why: 'x' })),
    } as unknown as CallChannel;
    await expect(held.hold('roots/list', {}, new AbortController().signal, refusing)).rejects.toMatchObject({
      code: -32602,
      message: 'no roots here',
      data: { why: 'x' },
    });
    const failing = { id: 'c2', requestInput: () => Promise.reject(new Error('boom')) } as unknown as CallChannel;
    await expect(held.hold('roots/list', {}, new AbortController().signal, failing)).rejects.toMatchObject({
      code: -32603,
      message: 'The client request ended before the input arrived',
    });
  });

  it('passes a refusal on to the backend as its error, not held again once the session is closed', async () => {
    let closed = false;
    const held = new HeldRequests({ closed: () => closed, otherThan: () => undefined });
    const { run } = callAnswering('c1', 'ended');
    closed = true;
    const answer = held.hold('roots/list', {}, new AbortController().signal, run);
    await expect(answer).rejects.toMatchObject({ code: -32603, message: CALL_ENDED });
  });
});
