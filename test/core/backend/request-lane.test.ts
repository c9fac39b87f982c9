/**
 * A session's own requests matched to their responses beside the v1 SDK client (request-lane.ts),
 * against the SDK's own server over its in-memory transport pair: what the caller sees is what the
 * SDK's `request` gave.
 */
import { getEventListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpError, ResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestLane, sdkIds } from '../../../src/core/backend/request-lane.js';
import { GatewayError } from '../../../src/errors.js';
import { sentMessages } from '../../helpers/sent-messages.js';
import { until } from '../../helpers/until.js';

interface Rig {
  client: Client;
  lane: RequestLane;
  /** Every message the client side sent. */
  sent: JSONRPCMessage[];
  /** What the SDK client and the lane reported as errors (a response the SDK could not place, a cancellation not sent). */
  errors: Error[];
  /** Resolves once the server's `wait` tool was cancelled (its signal aborted). */
  cancelled: Promise<void>;
  close(): Promise<void>;
}

const rigs: Rig[] = [];
afterEach(async () => {
  await Promise.all(rigs.splice(0).map((r) => r.close()));
});

async function rig(): Promise<Rig> {
  const server = new McpServer({ name: 'lane-test', version: '1.0.0' });
  let cancelled!: () => void;
  const wasCancelled = new Promise<void>((r) => (cancelled = r));
  server.registerTool('echo', { description: 'echo' }, async () => ({ content: [{ type: 'text', text: 'hi' }] }));
  server.registerTool('wait', { description: 'waits until cancelled' }, (extra) => {
    return new Promise((resolve) => {
      const stop = (): void => {
        cancelled();
        resolve({ content: [] });
      };
      // The cancellation may come before the handler runs.
      if (extra.signal.aborted) stop();
      else extra.signal.addEventListener('abort', stop);
    });
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'lane-test-client', version: '1.0.0' });
  const sent = sentMessages(clientSide);
  await client.connect(clientSide);
  const errors: Error[] = [];
  client.onerror = (e) => errors.push(e);
  const lane = new RequestLane(clientSide, sdkIds(client), (e) => errors.push(e));
  const r: Rig = {
    client,
    lane,
    sent,
    errors,
    cancelled: wasCancelled,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
  rigs.push(r);
  return r;
}

const forever = (): AbortSignal => new AbortController().signal;

describe('a request lane', () => {
  it("resolves results, takes its ids from the SDK client's counter, and leaves the SDK's own responses to it", async () => {
    const { client, lane, sent, errors } = await rig();
    const result = await lane.request('tools/call', { name: 'echo', arguments: {} }, { signal: forever(), timeoutMs: 5_000 });
    expect(result).toEqual({ content: [{ type: 'text', text: 'hi' }] });
    await client.ping(); // the SDK's own request, answered through the SDK
    await lane.request('ping', undefined, { timeoutMs: 5_000 });
    const ids = sent.filter((m) => 'id' in m && 'method' in m).map((m) => (m as { id: number }).id);
    expect(ids).toEqual([0, 1, 2, 3]); // initialize, the lane's call, the SDK's ping, the lane's ping
    expect(lane.size).toBe(0);
    // The lane's responses never reached the SDK (it would report each as an unknown message id).
    expect(errors).toEqual([]);
  });

  it("rejects an error response as the SDK's request does", async () => {
    const { client, lane } = await rig();
    const ours = await lane.request('no/such-method', {}, { signal: forever(), timeoutMs: 5_000 }).catch((e: unknown) => e);
    const sdks = await client.request({ method: 'no/such-method', params: {} } as never, ResultSchema).catch((e: unknown) => e);
    expect(ours).toBeInstanceOf(McpError);
    expect(ours).toMatchObject({ code: (sdks as McpError).code, message: (sdks as McpError).message, data: (sdks as McpError).data });
  });

  it('on its deadline rejects with -32001 and data.timeout, tells the backend to cancel, and lets go of the signal', async () => {
    const { lane, sent, cancelled } = await rig();
    const signal = forever();
    const e = await lane.request('tools/call', { name: 'wait', arguments: {} }, { signal, timeoutMs: 30 }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: -32001, data: { timeout: 30 } });
    await cancelled;
    const notice = sent.find((m) => 'method' in m && m.method === 'notifications/cancelled');
    expect(notice).toMatchObject({ params: { requestId: 1 } });
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(lane.size).toBe(0);
  });

  it("on abort rejects with the reason as the SDK's McpError and cancels at the backend; `abort` fails it with the error itself", async () => {
    const { lane, cancelled } = await rig();
    const controller = new AbortController();
    const aborted = lane.request('tools/call', { name: 'wait', arguments: {} }, { signal: controller.signal, timeoutMs: 5_000 }).catch((x: unknown) => x);
    controller.abort('stop');
    expect(await aborted).toMatchObject({ code: -32001, message: expect.stringContaining('stop') });
    await cancelled;

    const pending = lane.send('tools/call', { name: 'wait', arguments: {} }, { signal: forever(), timeoutMs: 5_000 });
    const broke = new GatewayError('backend_closed', 'b (the response stream broke)');
    pending.abort(broke);
    expect(await pending.promise.catch((x: unknown) => x)).toBe(broke);
    const late = new AbortController();
    late.abort('already');
    expect(await lane.request('ping', undefined, { signal: late.signal, timeoutMs: 5_000 }).catch((x: unknown) => x)).toBe('already');
  });

  it('fails what is in flight as the SDK does when the transport closes, and is not connected afterwards', async () => {
    const { client, lane } = await rig();
    const inFlight = lane.request('tools/call', { name: 'wait', arguments: {} }, { signal: forever(), timeoutMs: 5_000 }).catch((x: unknown) => x);
    await client.close();
    expect(await inFlight).toMatchObject({ code: -32000, message: expect.stringContaining('Connection closed') });
    await expect(lane.request('ping', undefined, { signal: forever(), timeoutMs: 5_000 })).rejects.toThrow('Not connected');
  });

  it('fails what is in flight when the transport closes even when a close handler before it throws', async () => {
    const { client, lane } = await rig();
    client.onclose = () => {
      throw new Error('a close handler failed');
    };
    const inFlight = lane.request('tools/call', { name: 'wait', arguments: {} }, { signal: forever(), timeoutMs: 5_000 }).catch((x: unknown) => x);
    await client.close().catch(() => undefined);
    expect(await inFlight).toMatchObject({ code: -32000, message: expect.stringContaining('Connection closed') });
    expect(lane.size).toBe(0);
  });

  it("refuses a client without the SDK's id counter", () => {
    expect(() => sdkIds({})).toThrow(/_requestMessageId/);
  });
  it('reads an id echoed as a string, passes a late response on to the SDK, and fails a request the transport would not send', async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    // A hand-driven backend: answers initialize, keeps every other request for the test to answer.
    const errors: Error[] = [];
    const held: { id: number | string; method: string }[] = [];
    serverSide.onmessage = (m) => {
      if (!('method' in m) || !('id' in m)) return;
      if (m.method === 'initialize') {
        serverSide
          .send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'raw', version: '1' } } })
          .catch((e: unknown) => errors.push(e as Error));
      } else held.push({ id: m.id, method: m.method });
    };
    await serverSide.start();
    const client = new Client({ name: 'lane-test-client', version: '1.0.0' });
    client.onerror = (e) => errors.push(e);
    await client.connect(clientSide);
    const lane = new RequestLane(clientSide, sdkIds(client), (e) => errors.push(e));
    try {
      const answered = lane.request('tools/call', { name: 'x' }, { timeoutMs: 5_000 });
      await until('the first request held', () => held.length === 1);
      await serverSide.send({ jsonrpc: '2.0', id: String(held[0]!.id), result: { content: [] } });
      expect(await answered).toEqual({ content: [] });

      const controller = new AbortController();
      const aborted = lane.request('tools/call', { name: 'y' }, { signal: controller.signal, timeoutMs: 5_000 }).catch((e: unknown) => e);
      await until('the second request held', () => held.length === 2);
      controller.abort('stop');
      await aborted;
      await serverSide.send({ jsonrpc: '2.0', id: held[1]!.id, result: { content: [] } });
      await until('the SDK told of the late response', () => errors.length === 1);
      expect(errors[0]!.message).toMatch(/unknown message ID/);

      const refused = new Error('pipe closed');
      const send = clientSide.send.bind(clientSide);
      clientSide.send = () => Promise.reject(refused);
      const failed = await lane.request('ping', undefined, { timeoutMs: 5_000 }).catch((e: unknown) => e);
      clientSide.send = send;
      expect(failed).toBe(refused);
      expect(lane.size).toBe(0);
    } finally {
      await client.close();
    }
  });
});
