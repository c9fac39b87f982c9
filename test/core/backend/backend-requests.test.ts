/**
 * A legacy session's requests for input answered beside the v1 SDK client (backend-requests.ts),
 * against the SDK's own server over its in-memory transport pair: what the server sees is what the
 * SDK client's own dispatch gave it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpError, ResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { BackendRequests, type BackendRequestHandler } from '../../../src/core/backend/backend-requests.js';
import type { Lifeline } from '../../../src/util/lifeline.js';
import { sentMessages } from '../../helpers/sent-messages.js';
import { until } from '../../helpers/until.js';

const ASK = { message: 'Name?', requestedSchema: { type: 'object' as const, properties: { name: { type: 'string' as const } } } };
const INPUT = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

interface Rig {
  server: Server;
  client: Client;
  requests: BackendRequests;
  /** Every message the client side sent. */
  sent: JSONRPCMessage[];
  /** Messages that went on past the requests' handler (to the SDK client). */
  passed: JSONRPCMessage[];
  /** What was true when the transport's earlier close handler ran. */
  closedBefore: { ran: boolean };
  close(): Promise<void>;
}

const rigs: Rig[] = [];
afterEach(async () => {
  await Promise.all(rigs.splice(0).map((r) => r.close()));
});

async function rig(handler: BackendRequestHandler): Promise<Rig> {
  const server = new Server({ name: 'requests-test', version: '1.0.0' }, { capabilities: {} });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'requests-test-client', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
  const sent = sentMessages(clientSide);
  await client.connect(clientSide);
  const passed: JSONRPCMessage[] = [];
  const deliver = clientSide.onmessage;
  clientSide.onmessage = (message, extra) => {
    passed.push(message);
    deliver?.(message, extra);
  };
  const closedBefore = { ran: false };
  const closed = clientSide.onclose;
  clientSide.onclose = () => {
    closedBefore.ran = true;
    closed?.();
  };
  const requests = new BackendRequests(clientSide, INPUT, handler, () => undefined);
  const r: Rig = { server, client, requests, sent, passed, closedBefore, close: () => client.close() };
  rigs.push(r);
  return r;
}

const responsesTo = (sent: readonly JSONRPCMessage[], id: unknown): JSONRPCMessage[] => sent.filter((m) => 'id' in m && m.id === id && !('method' in m));

describe('BackendRequests', () => {
  it("answers the backend's request for input with the handler's result, as the SDK client would", async () => {
    const asked: { method: string; params: unknown }[] = [];
    const r = await rig(async (method, params) => {
      asked.push({ method, params });
      return { action: 'accept', content: { name: 'Ada' } };
    });
    const answer = await r.server.elicitInput(ASK);
    expect(answer).toEqual({ action: 'accept', content: { name: 'Ada' } });
    expect(asked).toEqual([{ method: 'elicitation/create', params: { mode: 'form', ...ASK } }]);
    // Taken here: the SDK client never saw the request.
    expect(r.passed.filter((m) => 'method' in m && m.method === 'elicitation/create')).toEqual([]);
    expect(r.requests.size).toBe(0);
  });

  it('answers a rejection as an error with its code, message and data; anything else as -32603', async () => {
    let fail: unknown = Object.assign(new Error('no such thing'), { code: -32602, data: { why: 'x' } });
    const r = await rig(() => Promise.reject(fail));
    const first = await r.server.listRoots().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(McpError);
    expect(first).toMatchObject({ code: -32602, data: { why: 'x' } });
    expect((first as Error).message).toContain('no such thing');
    fail = new Error('broke');
    const second = await r.server.listRoots().catch((e: unknown) => e);
    expect(second).toMatchObject({ code: -32603 });
    expect((second as Error).message).toContain('broke');
    fail = 'not an error';
    const third = await r.server.listRoots().catch((e: unknown) => e);
    expect(third).toMatchObject({ code: -32603 });
    expect((third as Error).message).toContain('Internal error');
    // A handler that throws instead of rejecting is answered the same way: an error response sent, nothing left open.
    const thrown = await rig(() => {
      throw Object.assign(new Error('sync'), { code: -32600 });
    });
    const refused = await thrown.server.listRoots().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(McpError);
    expect(refused).toMatchObject({ code: -32600 });
    expect(thrown.sent.filter((m) => 'error' in m)).toEqual([expect.objectContaining({ error: { code: -32600, message: 'sync' } })]);
    expect(thrown.requests.size).toBe(0);
  });

  it("ends the request's lifeline when the backend cancels it, with its reason, and sends no answer", async () => {
    let lifeline!: Lifeline;
    let answer!: (v: Record<string, unknown>) => void;
    const r = await rig((_method, _params, cancel) => {
      lifeline = cancel;
      return new Promise((resolve) => (answer = resolve));
    });
    const withdraw = new AbortController();
    const asked = r.server.elicitInput(ASK, { signal: withdraw.signal }).catch((e: unknown) => e);
    await until('the request reached the handler', () => lifeline !== undefined);
    withdraw.abort('changed my mind');
    await until('the lifeline ended', () => lifeline.aborted);
    expect(lifeline.reason).toBe('changed my mind');
    expect(await asked).toBeInstanceOf(Error);
    expect(r.requests.size).toBe(0);
    const before = r.sent.length;
    answer({ action: 'accept', content: { name: 'late' } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(r.sent.length).toBe(before);
    // The cancellation was taken here, not passed on to the SDK.
    expect(r.passed.filter((m) => 'method' in m && m.method === 'notifications/cancelled')).toEqual([]);
  });

  it("ends request 0 when the backend cancels it (a v1 SDK server's first request; the SDK's own handler ignored it)", async () => {
    let lifeline!: Lifeline;
    const r = await rig((_method, _params, cancel) => {
      lifeline = cancel;
      return new Promise(() => undefined);
    });
    const fromServer = sentMessages(r.server.transport!);
    const withdraw = new AbortController();
    void r.server.listRoots(undefined, { signal: withdraw.signal }).catch(() => undefined);
    await until('the request reached the handler', () => lifeline !== undefined);
    expect(fromServer).toEqual([expect.objectContaining({ id: 0, method: 'roots/list' })]);
    withdraw.abort('gone');
    await until('the lifeline ended', () => lifeline.aborted);
    expect(fromServer.at(-1)).toMatchObject({ method: 'notifications/cancelled', params: { requestId: 0 } });
    expect(r.requests.size).toBe(0);
  });

  it('matches a cancellation by the id as the backend gave it: a string id is not the number', async () => {
    const cancels: Lifeline[] = [];
    const r = await rig((_method, _params, cancel) => {
      cancels.push(cancel);
      return new Promise(() => undefined);
    });
    // Sent as the backend would, with an id of its own choosing.
    await r.server.transport!.send({ jsonrpc: '2.0', id: '7', method: 'roots/list' });
    await until('the request reached the handler', () => cancels.length === 1);
    await r.server.notification({ method: 'notifications/cancelled', params: { requestId: 7, reason: 'number' } });
    await until('the cancellation went on to the SDK', () => r.passed.some((m) => 'method' in m && m.method === 'notifications/cancelled'));
    expect(cancels[0]!.aborted).toBe(false);
    await r.server.notification({ method: 'notifications/cancelled', params: { requestId: '7', reason: 'string' } });
    await until('the lifeline ended', () => cancels[0]!.aborted);
    expect(cancels[0]!.reason).toBe('string');
  });

  it('leaves a request for input that asks to be run as a task to the SDK, which refuses it as before', async () => {
    let asked = 0;
    const r = await rig(async () => {
      asked += 1;
      return { action: 'decline' };
    });
    // As a backend session has one (backend-session.ts): what reaches the SDK gets past its missing-handler answer.
    r.client.fallbackRequestHandler = async () => {
      asked += 1;
      return { action: 'decline' };
    };
    const refused = await r.server
      .request({ method: 'elicitation/create', params: { ...ASK, mode: 'form', task: { ttl: 1000 } } }, ResultSchema)
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32603 });
    expect((refused as Error).message).toContain('task');
    expect(asked).toBe(0);
    expect(r.passed.filter((m) => 'method' in m && m.method === 'elicitation/create')).toHaveLength(1);
  });

  it('ends every open request when the transport closes, even when a close handler before it throws', async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = new Server({ name: 'requests-test', version: '1.0.0' }, { capabilities: {} });
    await server.connect(serverSide);
    const client = new Client({ name: 'requests-test-client', version: '1.0.0' }, { capabilities: { roots: {} } });
    await client.connect(clientSide);
    client.onclose = () => {
      throw new Error('a close handler failed');
    };
    const lifelines: Lifeline[] = [];
    const requests = new BackendRequests(
      clientSide,
      INPUT,
      (_method, _params, cancel) => {
        lifelines.push(cancel);
        return new Promise(() => undefined);
      },
      () => undefined,
    );
    void server.listRoots().catch(() => undefined);
    await until('the request reached the handler', () => lifelines.length === 1);
    await clientSide.close().catch(() => undefined);
    expect(lifelines[0]!.aborted).toBe(true);
    expect(requests.size).toBe(0);
  });

  it('ends every open request when the transport closes, after the handlers that were there ran', async () => {
    const ended: { reason: unknown; closedFirst: boolean }[] = [];
    const lifelines: Lifeline[] = [];
    const r = await rig((_method, _params, cancel) => {
      lifelines.push(cancel);
      cancel.addEventListener('abort', () => ended.push({ reason: cancel.reason, closedFirst: r.closedBefore.ran }));
      return new Promise(() => undefined);
    });
    void r.server.elicitInput(ASK).catch(() => undefined);
    void r.server.listRoots().catch(() => undefined);
    await until('both requests reached the handler', () => lifelines.length === 2);
    await r.close();
    expect(ended).toHaveLength(2);
    for (const e of ended) {
      expect(e.closedFirst).toBe(true);
      expect((e.reason as Error).name).toBe('AbortError');
    }
    expect(r.requests.size).toBe(0);
  });

  it("passes the backend's other requests, and cancellations of requests not its own, to the SDK", async () => {
    const r = await rig(async () => ({ roots: [] }));
    // ping: the SDK client's own handler answers it.
    await expect(r.server.ping()).resolves.toEqual({});
    // A method the requests' handler does not take: the SDK client refuses it (no handler).
    const other = await r.server.request({ method: 'tools/list', params: {} }, ResultSchema).catch((e: unknown) => e);
    expect(other).toMatchObject({ code: -32601 });
    expect(r.passed.filter((m) => 'method' in m).map((m) => (m as { method: string }).method)).toEqual(['ping', 'tools/list']);
    // A cancellation of an id no request of its own has.
    await r.server.notification({ method: 'notifications/cancelled', params: { requestId: 'nobody', reason: 'x' } });
    await until('the cancellation went on to the SDK', () => r.passed.some((m) => 'method' in m && m.method === 'notifications/cancelled'));
    expect(responsesTo(r.sent, 'nobody')).toEqual([]);
  });
});
