/**
 * A legacy session's requests in flight: counted from arrival until their answer went out (or they were
 * cancelled), per session and over all sessions, seen through a transport decorator that leaves the
 * transport's own methods alone; one log line per exchange.
 */
import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage, MessageExtraInfo, Transport } from '@modelcontextprotocol/server';
import { silentLogger, type Logger } from '../../../src/log.js';
import { CountedTransport, RequestTally, SessionRequests } from '../../../src/fronts/legacy/session-requests.js';

/** A transport whose sends wait until the test lets them go. */
class FakeTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined;
  sessionId = 'i~1';
  versions: string[] = [];
  sent: JSONRPCMessage[] = [];
  #release: (() => void)[] = [];

  async start(): Promise<void> {}
  async send(message: JSONRPCMessage): Promise<void> {
    await new Promise<void>((r) => this.#release.push(r));
    this.sent.push(message);
  }
  async close(): Promise<void> {
    this.onclose?.();
  }
  setProtocolVersion(version: string): void {
    this.versions.push(version);
  }
  /** Lets every waiting send go out. */
  releaseSends(): void {
    for (const r of this.#release.splice(0)) r();
  }
}

const request = (id: number, method = 'tools/call', params: Record<string, unknown> = { name: 'echo' }): JSONRPCMessage => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});
const answer = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: {} });

function recordingLog(): { log: Logger; lines: object[] } {
  const lines: object[] = [];
  const log: Logger = { ...silentLogger, info: (obj, msg) => void (msg === 'mcp' && lines.push(obj)), child: () => log };
  return { log, lines };
}

describe('legacy session requests in flight', () => {
  it('counts a request from its arrival until its answer has been sent, not merely handed to the transport', async () => {
    const tally = new RequestTally();
    const requests = new SessionRequests(tally, silentLogger);
    const inner = new FakeTransport();
    const counted = new CountedTransport(inner, requests);
    const seen: JSONRPCMessage[] = [];
    counted.onmessage = (m) => void seen.push(m);

    inner.onmessage?.(request(1));
    expect(seen).toEqual([request(1)]);
    expect([requests.size, tally.count]).toEqual([1, 1]);

    const sending = counted.send(answer(1));
    await new Promise((r) => setTimeout(r, 0));
    expect(requests.size).toBe(1); // the answer has not gone out yet
    inner.releaseSends();
    await sending;
    expect(inner.sent).toEqual([answer(1)]);
    expect([requests.size, tally.count]).toEqual([0, 0]);
  });

  it('ends a request the client cancelled (the SDK server never answers it)', () => {
    const requests = new SessionRequests(new RequestTally(), silentLogger);
    requests.received(request(7));
    requests.received({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 8 } });
    expect(requests.size).toBe(1);
    requests.received({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user' } });
    expect(requests.size).toBe(0);
  });

  it('counts over every session, and forgets what a closed transport had in flight', async () => {
    const tally = new RequestTally();
    const [a, b] = [new SessionRequests(tally, silentLogger), new SessionRequests(tally, silentLogger)];
    const inner = new FakeTransport();
    const counted = new CountedTransport(inner, a);
    let closed = 0;
    counted.onclose = () => void closed++;
    inner.onmessage?.(request(1));
    inner.onmessage?.(request(2));
    b.received(request(1));
    expect([a.size, b.size, tally.count]).toEqual([2, 1, 3]);
    await counted.close();
    expect(closed).toBe(1);
    expect([a.size, b.size, tally.count]).toEqual([0, 1, 1]);
  });

  it('counts a request whose id is reused once', () => {
    const tally = new RequestTally();
    const requests = new SessionRequests(tally, silentLogger);
    requests.received(request(1));
    requests.received(request(1));
    expect([requests.size, tally.count]).toEqual([1, 1]);
  });

  it('logs each answered or cancelled exchange once: method, name, time, result type or error (code, reason, message)', () => {
    const { log, lines } = recordingLog();
    const requests = new SessionRequests(new RequestTally(), log);
    requests.received(request(1, 'tools/call', { name: 'echo', arguments: { secret: 'x' } }));
    requests.received(request(2, 'resources/read', { uri: 'test://a?token=SECRETQ' }));
    requests.received(request(3, 'ping', {}));
    requests.received(request(4, 'tools/call', { name: 'greet' }));
    requests.sent(answer(1));
    requests.sent(answer(1));
    requests.sent({ jsonrpc: '2.0', id: 2, error: { code: -32002, message: 'Resource test://a?token=SECRETQ not found' } });
    requests.received({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } });
    requests.sent({ jsonrpc: '2.0', id: 4, error: { code: -32603, message: 'The gateway is shutting down', data: { reason: 'gateway_closing' } } });
    expect(lines).toEqual([
      { method: 'tools/call', name: 'echo', ms: expect.any(Number), resultType: 'complete' },
      { method: 'resources/read', name: 'test://a?token=…', ms: expect.any(Number), code: -32002, error: 'Resource test://a?token=… not found' },
      { method: 'ping', name: undefined, ms: expect.any(Number), cancelled: true },
      { method: 'tools/call', name: 'greet', ms: expect.any(Number), code: -32603, reason: 'gateway_closing', error: 'The gateway is shutting down' },
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/secret|SECRETQ/);
  });

  it("passes the transport's session id, protocol version and message extras through", () => {
    const inner = new FakeTransport();
    const counted = new CountedTransport(inner, new SessionRequests(new RequestTally(), silentLogger));
    expect(counted.sessionId).toBe('i~1');
    counted.setProtocolVersion('2025-11-25');
    expect(inner.versions).toEqual(['2025-11-25']);
    const extras: (MessageExtraInfo | undefined)[] = [];
    counted.onmessage = (_m, extra) => void extras.push(extra);
    const extra = { requestInfo: { headers: {} } } as MessageExtraInfo;
    inner.onmessage?.(request(1), extra);
    expect(extras).toEqual([extra]);
  });
  it('cancels a request served beside the SDK server when its client cancels it, reuses its id, or the transport closes; its answer ends only itself', () => {
    const tally = new RequestTally();
    const requests = new SessionRequests(tally, silentLogger);
    const why: string[] = [];
    const hook = (tag: string) => (reason: string) => void why.push(`${tag}: ${reason}`);
    const first = hook('first');
    requests.received(request(1), first);
    requests.received({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    expect(why).toEqual(['first: the client cancelled the request']);
    expect(tally.count).toBe(0);

    const old = hook('old');
    requests.received(request(2), old);
    const reused = hook('reused');
    requests.received(request(2), reused);
    expect(why.at(-1)).toBe('old: the client sent another request with its id');
    expect(requests.size).toBe(1);
    requests.sent(answer(2), old); // the first request's late answer does not end the second
    expect(requests.size).toBe(1);
    requests.sent(answer(2), reused);
    expect(requests.size).toBe(0);

    requests.received(request(3), hook('third'));
    requests.clear();
    expect(why.at(-1)).toBe('third: the session ended');
    expect(tally.count).toBe(0);
  });
});
