/**
 * A 2026-07-28 backend behind the gateway: no session; its input_required passes through to the
 * client with its requestState wrapped inside the gateway's, so the retry is routed back to it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, firstText, startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { wireChecked, wireStats, wireViolations } from '../helpers/gateway.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { captureLog } from '../helpers/log.js';
import { freePort } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { assertWireResponse, post } from '../helpers/wire.js';
import { readyz } from '../helpers/readiness.js';
import { REACH_CHECK_MS } from '../../src/core/readiness.js';

let modern: Awaited<ReturnType<typeof startModernServer>>;
let gw: RunningGateway;

beforeAll(async () => {
  modern = await startModernServer();
  gw = await startGateway({
    mcpServers: { modern: { url: modern.url, protocol: '2026-07-28', tasks: { tools: { slow_confirm: { promoteAfterMs: 0 } } } }, legacy: stdioFixture() },
  });
});
afterAll(async () => {
  await gw?.close();
  await modern?.close();
});

describe('a 2026-07-28 backend behind the gateway', () => {
  it('lists and calls its tools next to a legacy backend', async () => {
    const r = await post(gw.url, 'tools/list');
    assertWireResponse('tools/list', r.message);
    const names = (r.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['modern__plain', 'modern__confirm', 'legacy__echo']));
    const c = await post(gw.url, 'tools/call', { name: 'modern__plain', arguments: { text: 'hi' } });
    assertWireResponse('tools/call', c.message);
    expect(c.message['result']).toMatchObject({ content: [{ text: 'modern:hi' }], resultType: 'complete' });
  });

  it('passes input_required through and routes the retry back with the backend state', async () => {
    const r1 = await post(gw.url, 'tools/call', { name: 'modern__confirm', arguments: { what: 'launch' } }, { caps: { elicitation: {} } });
    assertWireResponse('tools/call', r1.message);
    const ir = r1.message['result'] as { inputRequests: Record<string, { method: string }>; requestState: string };
    expect(Object.keys(ir.inputRequests)).toEqual(['confirm']);
    expect(ir.requestState).not.toMatch(/^v1\./); // the backend's own state is sealed inside ours
    const r2 = await post(
      gw.url,
      'tools/call',
      {
        name: 'modern__confirm',
        arguments: { what: 'launch' },
        inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
        requestState: ir.requestState,
      },
      { caps: { elicitation: {} } },
    );
    assertWireResponse('tools/call', r2.message);
    expect(r2.message['result']).toMatchObject({ content: [{ text: 'confirmed launch ok=true' }] });
    const other = await post(
      gw.url,
      'tools/call',
      { name: 'modern__confirm', arguments: { what: 'other' }, inputResponses: {}, requestState: ir.requestState },
      { caps: { elicitation: {} } },
    );
    expect(other.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_request' } });
  });

  it('lets the v2 client drive the rounds end to end', async () => {
    const client = await connectClient(gw.url, { elicitation: {} });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { ok: true } }));
    expect(firstText(await client.callTool({ name: 'modern__confirm', arguments: { what: 'deploy' } }))).toBe('confirmed deploy ok=true');
    await client.close();
  });
});

describe('wire', () => {
  it('sent only schema-valid 2026-07-28 messages to the SDK clients above', async () => {
    await wireChecked(); // the replies' checks read their bodies after the clients did
    expect(wireViolations).toEqual([]);
    expect(wireStats.checked).toBeGreaterThan(0);
  });
});

describe("a 2026-07-28 backend's own tasks", () => {
  const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

  it('pass through under a wrapped id that routes tasks/* back to the backend, for the creating principal only', async () => {
    const created = await post(gw.url, 'tools/call', { name: 'modern__long_job', arguments: { ms: 200 } }, { caps: TASKS });
    assertWireResponse('tools/call', created.message);
    const task = created.message['result'] as Record<string, unknown>;
    expect(task).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 60_000, pollIntervalMs: 50 });
    const taskId = task['taskId'] as string;
    expect(taskId.startsWith('r~')).toBe(true);
    expect(taskId).not.toContain('bt-');
    let got: Record<string, unknown> = {};
    await until('the backend task to end', async () => {
      const r = await post(gw.url, 'tasks/get', { taskId }, { caps: TASKS });
      assertWireResponse('tasks/get', r.message);
      got = r.message['result'] as Record<string, unknown>;
      return got['status'] !== 'working';
    });
    expect(got).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text', text: 'job done' }] } });
    // The 2025-11-25 related-task key the backend put on its result is not passed on.
    expect((got['result'] as { _meta?: Record<string, unknown> })._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
    // A tampered or foreign wrapped id is not found.
    const tampered = await post(gw.url, 'tasks/get', { taskId: `${taskId.slice(0, -4)}AAAA` }, { caps: TASKS });
    expect(tampered.message['error']).toMatchObject({ code: -32602 });
    const cancel = await post(gw.url, 'tasks/cancel', { taskId }, { caps: TASKS });
    assertWireResponse('tasks/cancel', cancel.message);
  });

  it('without the extension a call never gets the backend task leg', async () => {
    const r = await post(gw.url, 'tools/call', { name: 'modern__plain', arguments: { text: 'x' } }, { caps: {} });
    expect(r.message['result']).toMatchObject({ resultType: 'complete' });
  });
});

describe('a gateway task over a 2026-07-28 backend', () => {
  const ASKING = { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const get = async (taskId: string) => {
    const r = await post(gw.url, 'tasks/get', { taskId }, { caps: ASKING });
    assertWireResponse('tasks/get', r.message);
    return r.message['result'] as Record<string, unknown>;
  };
  const reaches = async (taskId: string, status: string) => {
    let t: Record<string, unknown> = {};
    await until(`the task to be ${status}`, async () => (t = await get(taskId))['status'] === status);
    return t;
  };

  it("carries the backend's input_required inside the task: answered with tasks/update, retried with its requestState", async () => {
    const created = await post(gw.url, 'tools/call', { name: 'modern__slow_confirm', arguments: { ms: 100 } }, { caps: ASKING });
    assertWireResponse('tools/call', created.message);
    const taskId = (created.message['result'] as Record<string, unknown>)['taskId'] as string;
    expect(taskId.startsWith(`${gw.gateway.instanceId}~`)).toBe(true);
    const waiting = await reaches(taskId, 'input_required');
    expect(waiting['inputRequests']).toMatchObject({ go: { method: 'elicitation/create' } });
    const ack = await post(gw.url, 'tasks/update', { taskId, inputResponses: { go: { action: 'accept', content: { go: true } } } }, { caps: ASKING });
    assertWireResponse('tasks/update', ack.message);
    const done = await reaches(taskId, 'completed');
    expect(done['result']).toMatchObject({ content: [{ type: 'text', text: 'went on after 100 ms: true' }] });
  });

  it('cancels a task that waits for a stateless round', async () => {
    const created = await post(gw.url, 'tools/call', { name: 'modern__slow_confirm', arguments: { ms: 10 } }, { caps: ASKING });
    const taskId = (created.message['result'] as Record<string, unknown>)['taskId'] as string;
    await reaches(taskId, 'input_required');
    await post(gw.url, 'tasks/cancel', { taskId }, { caps: ASKING });
    expect(await get(taskId)).toMatchObject({ status: 'cancelled' });
    const late = await post(gw.url, 'tasks/update', { taskId, inputResponses: { go: { action: 'accept', content: { go: true } } } }, { caps: ASKING });
    expect(late.message['result']).toMatchObject({ resultType: 'complete' });
    expect(await get(taskId)).toMatchObject({ status: 'cancelled' });
  });
});

describe('a legacy client in front of a 2026-07-28 backend', () => {
  it("gets the backend's input_required as a real elicitation request in its session", async () => {
    const { Client: V1Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport: V1Transport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const client = new V1Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(String(req.params.message));
      return { action: 'accept', content: { ok: true } };
    });
    await client.connect(new V1Transport(new URL(gw.url)));
    const r = await client.callTool({ name: 'modern__confirm', arguments: { what: 'launch' } });
    expect(asked).toEqual(['Confirm launch?']);
    expect((r.content as { text: string }[])[0]!.text).toBe('confirmed launch ok=true');
    await client.close();
  });
});

describe('a 2026-07-28 backend that cannot be reached', () => {
  it('is backend_unavailable, never "method not found" or "unknown tool", and its outage is logged once at warn', async () => {
    const log = captureLog();
    const down = await startGateway(
      { mcpServers: { core: { url: `http://127.0.0.1:${await freePort()}/mcp`, protocol: '2026-07-28' } } },
      { logger: log.logger },
    );
    try {
      for (const [method, params] of [
        ['tools/list', {}],
        ['tools/call', { name: 'echo', arguments: {} }],
      ] as const) {
        const r = await post(down.url, method, params);
        assertWireResponse(method, r.message);
        expect(r.message['error'], method).toMatchObject({ data: { reason: 'backend_unavailable' } });
      }
      expect(log.lines.filter((l) => l['msg'] === 'backend unavailable (2026-07-28): cannot connect')).toHaveLength(1);
    } finally {
      await down.close();
    }
  });
});

/**
 * A server on 127.0.0.1 in front of the fixture server: `intercept` sees each request's body and may
 * answer it (or drop its connection, or hold it) itself by returning true; the rest pass through.
 */
async function relayBefore(
  target: () => string,
  intercept: (body: Buffer, req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<{ url: string; close(): Promise<void> }> {
  const relay = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (intercept(body, req, res)) return;
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'content-length')) as Record<string, string>;
    const answer = await fetch(target(), { method: req.method ?? 'GET', headers, ...(body.length ? { body: new Uint8Array(body) } : {}) });
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (name !== 'content-length' && name !== 'transfer-encoding') out[name] = value;
    });
    res.writeHead(answer.status, out);
    res.end(Buffer.from(await answer.arrayBuffer()));
  };
  const server = createServer((req, res) => void relay(req, res).catch(() => res.destroy()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('a 2026-07-28 backend whose connection breaks after it read a call', () => {
  it('tells the client the call may have run (backend_closed), and a list on the same backend still works', async () => {
    // A tools/call of `plain` is read and its connection destroyed, as a server that crashed mid-call (or a proxy that reset it) would.
    const cutter = await relayBefore(
      () => modern.url,
      (body, req) => body.includes('"tools/call"') && body.includes('"plain"') && (req.socket.destroy(), true),
    );
    const cut = await startGateway({ mcpServers: { m: { url: cutter.url, protocol: '2026-07-28' } } });
    try {
      const r = await post(cut.url, 'tools/call', { name: 'plain', arguments: { text: 'once' } });
      assertWireResponse('tools/call', r.message);
      expect(r.message['error']).toMatchObject({ data: { reason: 'backend_closed' } });
      expect((r.message['error'] as { message: string }).message).toMatch(/it may have run/);
      expect((await post(cut.url, 'tools/list', {})).message['result']).toMatchObject({
        tools: expect.arrayContaining([expect.objectContaining({ name: 'plain' })]),
      });
    } finally {
      await cut.close();
      await cutter.close();
    }
  });

  it('says a call the backend refused with 403 did not run, names the status, and warns once that the gateway is refused', async () => {
    const refusing = await relayBefore(
      () => modern.url,
      (body, _req, res) => body.includes('"tools/call"') && (res.writeHead(403, { 'content-type': 'text/plain' }).end('forbidden'), true),
    );
    const log = captureLog();
    const gw403 = await startGateway({ mcpServers: { m: { url: refusing.url, protocol: '2026-07-28' } } }, { logger: log.logger });
    try {
      for (const text of ['a', 'b']) {
        const r = await post(gw403.url, 'tools/call', { name: 'plain', arguments: { text } });
        expect(r.message['error']).toMatchObject({ data: { reason: 'backend_unavailable' } });
        expect((r.message['error'] as { message: string }).message).toContain('HTTP 403');
      }
      expect(log.lines.filter((l) => String(l['msg']).startsWith('the backend refused the gateway'))).toEqual([expect.objectContaining({ status: 403 })]);
    } finally {
      await gw403.close();
      await refusing.close();
    }
  });
});

/**
 * A gateway before the modern backend through a relay that, once `freeze` is called, holds every
 * request it gets unanswered (a frozen server); `close` ends the gateway, the held requests and the relay.
 */
async function frozenLater(gateway: Record<string, unknown>): Promise<{ url: string; freeze(): void; close(): Promise<void> }> {
  let frozen = false;
  const held: ServerResponse[] = [];
  const front = await relayBefore(
    () => modern.url,
    (_body, _req, res) => frozen && (held.push(res), true),
  );
  const gw = await startGateway({ mcpServers: { modern: { url: front.url, protocol: '2026-07-28' } }, gateway });
  return {
    url: gw.url,
    freeze() {
      frozen = true;
    },
    async close() {
      await gw.close();
      for (const res of held) res.destroy();
      await front.close();
    },
  };
}

describe('a 2026-07-28 backend that stops answering (frozen)', () => {
  it('is down on /readyz within its check (2 s), and a list it holds up answers within listTimeoutMs', async () => {
    const slow = await frozenLater({ listTimeoutMs: 1_000 });
    try {
      expect((await post(slow.url, 'tools/list', {})).message['result']).toMatchObject({
        tools: expect.arrayContaining([expect.objectContaining({ name: 'plain' })]),
      });
      expect(await readyz(slow.url)).toMatchObject({ status: 200, body: { backends: [{ name: 'modern', state: 'up' }] } });
      slow.freeze();
      let started = performance.now();
      expect(await readyz(slow.url)).toMatchObject({
        status: 503,
        body: { backends: [{ name: 'modern', state: 'down', lastError: expect.stringMatching(/within 2000 ms/) }] },
      });
      expect(performance.now() - started).toBeLessThan(2 * REACH_CHECK_MS);
      // A list not fetched yet: its connect and the list together are bounded by listTimeoutMs (1 s), not the 20 s connect deadline.
      started = performance.now();
      const prompts = await post(slow.url, 'prompts/list', {});
      assertWireResponse('prompts/list', prompts.message);
      expect(performance.now() - started).toBeLessThan(3 * 1_000);
    } finally {
      await slow.close();
    }
  });

  it("answers a backend task's tasks/get it holds up with backend_timeout, a JSON-RPC error (not the deadline's DOMException code 23)", async () => {
    const slow = await frozenLater({ listTimeoutMs: 1_000, callTimeoutMs: 1_500 });
    const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    try {
      const created = await post(slow.url, 'tools/call', { name: 'long_job', arguments: { ms: 60_000 } }, { caps: TASKS });
      const taskId = (created.message['result'] as { taskId: string }).taskId;
      slow.freeze();
      const got = await post(slow.url, 'tasks/get', { taskId }, { caps: TASKS });
      expect(got.message['error']).toMatchObject({
        code: -32603,
        data: { reason: 'backend_timeout' },
        message: expect.stringMatching(/tasks\/get unanswered within listTimeoutMs/),
      });
      // A call that would get the backend's own task, held up past callTimeoutMs: the same, naming that.
      const call = await post(slow.url, 'tools/call', { name: 'long_job', arguments: { ms: 10 } }, { caps: TASKS });
      expect(call.message['error']).toMatchObject({
        code: -32603,
        data: { reason: 'backend_timeout' },
        message: expect.stringMatching(/tools\/call unanswered within callTimeoutMs/),
      });
    } finally {
      await slow.close();
    }
  });

  it('bounds a call that waits for a reconnect by callTimeoutMs, not the 20 s connect deadline', async () => {
    const slow = await frozenLater({ listTimeoutMs: 1_000, callTimeoutMs: 2_000 });
    try {
      expect((await post(slow.url, 'tools/list', {})).message['result']).toMatchObject({
        tools: expect.arrayContaining([expect.objectContaining({ name: 'plain' })]),
      });
      slow.freeze();
      // The check drops the client: the call's connect is a new one, which the frozen server holds up.
      expect(await readyz(slow.url)).toMatchObject({ status: 503 });
      const started = performance.now();
      const call = await post(slow.url, 'tools/call', { name: 'plain', arguments: { text: 'x' } });
      expect(call.message['error']).toMatchObject({ data: { reason: 'backend_timeout' } });
      expect(performance.now() - started).toBeLessThan(2 * 2_000 + 1_000);
    } finally {
      await slow.close();
    }
  });
});
