/**
 * `/metrics` on the admin listener (a real HTTP server of its own) after a known sequence over a real
 * legacy stdio backend: three pass-through calls, one two-round MRTR call (its think time set on the
 * gateway's clock), one tampered retry, one task. The counters move by exactly what happened; the
 * gauges show the parked call and the task while they are held; no label value is ever an id.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASKS_EXTENSION } from '../../src/protocol/rev-2026-07-28/tasks.js';
import { serveAdmin, type RunningAdmin } from '../helpers/admin.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { parseExposition, type Exposition } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';
import { assertWireResponse, post, type WireReply } from '../helpers/wire.js';

const KEY = 'metrics-key-0123456789';
const ASKING = { elicitation: {} };
const TASKS = { extensions: { [TASKS_EXTENSION]: {} } };
const clock = new ManualClock();
let gw: RunningGateway;
let admin: RunningAdmin;
let adminUrl: string;

beforeAll(async () => {
  gw = await startGateway(
    {
      mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared', tasks: { tools: { slow: { promoteAfterMs: 0 } } } } },
      gateway: { coalesceMs: 0, apiKeys: [{ principal: 'alice', key: KEY }], admin: { port: 0 } },
    },
    { clock },
  );
  admin = await serveAdmin(gw);
  adminUrl = admin.url;
});
afterAll(async () => {
  await admin?.close();
  await gw?.close();
});

async function scrape(): Promise<Exposition> {
  const res = await fetch(`${adminUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

async function rpc(method: string, params: Record<string, unknown>, caps: Record<string, unknown> = ASKING): Promise<Record<string, unknown>> {
  const r: WireReply = await post(gw.url, method, params, { caps, headers: { authorization: `Bearer ${KEY}` } });
  assertWireResponse(method, r.message);
  return r.message;
}

const requests = (outcome: string, method = 'tools/call') => `mcp_gateway_requests_total{front="mcp",method="${method}",outcome="${outcome}"}`;

describe('/metrics after a known sequence', () => {
  it('moves each counter by exactly what happened, and the gauges show what is held', async () => {
    const before = await scrape();
    // Three pass-through calls.
    for (const text of ['a', 'b', 'c']) expect(await rpc('tools/call', { name: 'echo', arguments: { text } })).toHaveProperty('result.resultType', 'complete');
    // One two-round call: input_required, then its retry 2.5 s later on the gateway's clock.
    const first = (await rpc('tools/call', { name: 'elicit_name' }))['result'] as { requestState: string };
    clock.advance(2_500);
    const retry = { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } } };
    expect(await rpc('tools/call', { ...retry, requestState: first.requestState })).toHaveProperty('result.resultType', 'complete');
    // One tampered retry: refused, and its call stays parked.
    const parked = (await rpc('tools/call', { name: 'elicit_name' }))['result'] as { requestState: string };
    const s = parked.requestState;
    const tampered = s.slice(0, -3) + (s.at(-3) === 'A' ? 'B' : 'A') + s.slice(-2); // a character of the tag that is all data
    expect(await rpc('tools/call', { ...retry, requestState: tampered })).toHaveProperty('error.data.reason', 'request_state_invalid');
    const holding = await scrape();
    expect(holding.value('mcp_gateway_parked_calls{backend="legacy"}')).toBe(1);
    expect(holding.count('mcp_gateway_parked_call_age_seconds')).toBe(1);
    expect(await rpc('tools/call', { ...retry, requestState: parked.requestState })).toHaveProperty('result.resultType', 'complete');
    // One task, polled until it completed.
    const task = (await rpc('tools/call', { name: 'slow', arguments: { id: 't', ms: 200 } }, TASKS))['result'] as { taskId: string; resultType: string };
    expect(task.resultType).toBe('task');
    let polls = 0;
    await until('the task to complete', async () => {
      polls++;
      return ((await rpc('tasks/get', { taskId: task.taskId }, TASKS))['result'] as { status: string }).status === 'completed';
    });
    await until('every call to end', () => gw.gateway.engine.live === 0);
    const after = await scrape();
    const delta = (series: string): number => after.value(series) - before.value(series);

    expect(delta(requests('complete'))).toBe(5);
    expect(delta(requests('input_required'))).toBe(2);
    expect(delta(requests('task'))).toBe(1);
    expect(delta(requests('request_state_invalid'))).toBe(1);
    expect(delta(requests('complete', 'tasks/get'))).toBe(polls);
    expect(delta('mcp_gateway_request_state_failures_total{reason="invalid"}')).toBe(1);
    expect(delta('mcp_gateway_request_duration_seconds_count{front="mcp",method="tools/call"}')).toBe(9);
    // Think time: the first retry 2.5 s after its round, the second one at once (the clock stood still).
    expect(delta('mcp_gateway_client_think_seconds_count')).toBe(2);
    expect(delta('mcp_gateway_client_think_seconds_sum')).toBe(2.5);
    expect(delta('mcp_gateway_client_think_seconds_bucket{le="0.1"}')).toBe(1);
    expect(delta('mcp_gateway_client_think_seconds_bucket{le="2.5"}')).toBe(2);
    // Rounds per call: three and the task's with none, two with one input round each.
    expect(delta('mcp_gateway_call_input_rounds_count')).toBe(6);
    expect(delta('mcp_gateway_call_input_rounds_bucket{le="0"}')).toBe(4);
    expect(delta('mcp_gateway_call_input_rounds_sum')).toBe(2);
    expect(after.value('mcp_gateway_parked_calls{backend="legacy"}')).toBe(0);
    expect(after.value('mcp_gateway_tasks{status="completed"}')).toBe(1);
    expect(after.value('mcp_gateway_backend_up{backend="legacy"}')).toBe(1);
    expect(after.value('mcp_gateway_backend_connection_changes_total{backend="legacy",change="connected"}')).toBe(1);
    expect(after.value('mcp_gateway_live_calls')).toBe(0);
    // Process metrics are the entry point's (main.test.ts): a gateway built as a library starts no observers.
    expect(after.has('process_cpu_user_seconds_total')).toBe(false);
  });

  it('counts each request of a legacy session (the v1 SDK client) once under front="legacy", its input rounds inside it', async () => {
    const before = await scrape();
    const client = new Client({ name: 'legacy-metrics', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    try {
      expect(await client.callTool({ name: 'echo', arguments: { text: 'x' } })).toMatchObject({ content: [{ text: 'x' }] });
      expect(await client.callTool({ name: 'elicit_name', arguments: {} })).toMatchObject({ content: [{ text: 'Hello, Ada!' }] });
      // Answered by the session's own server, not the dispatcher: counted all the same.
      await client.ping();
      await client.setLoggingLevel('info');
      await expect(client.request({ method: 'made/up', params: {} }, ResultSchema)).rejects.toThrow(/Method not found/);
    } finally {
      await client.close();
    }
    const after = await scrape();
    const delta = (series: string): number => after.value(series) - before.value(series);
    expect(delta('mcp_gateway_requests_total{front="legacy",method="initialize",outcome="complete"}')).toBe(1);
    expect(delta('mcp_gateway_requests_total{front="legacy",method="ping",outcome="complete"}')).toBe(1);
    expect(delta('mcp_gateway_requests_total{front="legacy",method="logging/setLevel",outcome="complete"}')).toBe(1);
    expect(delta('mcp_gateway_requests_total{front="legacy",method="other",outcome="method_not_found"}')).toBe(1);
    expect(delta('mcp_gateway_requests_total{front="legacy",method="tools/call",outcome="complete"}')).toBe(2);
    expect(delta('mcp_gateway_requests_total{front="legacy",method="tools/call",outcome="input_required"}')).toBe(0);
    expect(delta('mcp_gateway_request_duration_seconds_count{front="legacy",method="tools/call"}')).toBe(2);
    expect(delta(requests('complete'))).toBe(0);
  });

  it('counts the requests refused before they became an exchange, by check and status', async () => {
    const before = await scrape();
    const send = (headers: Record<string, string>, body = '{}') =>
      fetch(gw.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect((await send({})).status).toBe(401); // no key
    expect((await send({ authorization: 'Bearer wrong-key-0123456789' })).status).toBe(401);
    expect((await send({ authorization: `Bearer ${KEY}`, 'content-type': 'text/plain' })).status).toBe(415);
    expect((await send({ authorization: `Bearer ${KEY}` }, '{not json')).status).toBe(400);
    const after = await scrape();
    const delta = (series: string) => (after.value(series) ?? 0) - (before.value(series) ?? 0);
    expect(delta('mcp_gateway_refused_requests_total{check="gate",status="401"}')).toBe(2);
    expect(delta('mcp_gateway_refused_requests_total{check="content",status="415"}')).toBe(1);
    expect(delta('mcp_gateway_refused_requests_total{check="body",status="400"}')).toBe(1);
  });

  it('counts a subscriptions/listen stream as a request when it ends (its client closed it: client_gone)', async () => {
    const series = 'mcp_gateway_requests_total{front="mcp",method="subscriptions/listen",outcome="client_gone"}';
    const before = (await scrape()).value(series) ?? 0;
    const closer = new AbortController();
    const res = await fetch(gw.url, {
      method: 'POST',
      signal: closer.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
        authorization: `Bearer ${KEY}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'listen-1',
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true },
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
        },
      }),
    });
    expect(res.status).toBe(200);
    await res.body!.getReader().read(); // the acknowledgement
    closer.abort();
    await until('the listen stream counted', async () => ((await scrape()).value(series) ?? 0) === before + 1);
  });

  it('never carries an id, a principal or a key as a label value', async () => {
    // A method and a tool name a client made up must not become label values either.
    expect(await rpc('made/up-method-4f9c', {})).toHaveProperty('error.code', -32601);
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    const values = parseExposition(text).labelValues();
    expect(values.size).toBeGreaterThan(10);
    const ids = [...values].filter((v) => /[0-9A-HJKMNP-TV-Z]{26}|~|alice|4f9c|metrics-key/i.test(v));
    expect(ids).toEqual([]);
    expect(text).not.toContain(KEY);
    expect(parseExposition(text).value('mcp_gateway_requests_total{front="mcp",method="other",outcome="method_not_found"}')).toBe(1);
  });
});
