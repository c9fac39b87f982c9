/**
 * Traces (issue 28's proof): the SDK as main.ts starts it (otel-sdk.ts), exporting to an in-process
 * OTLP/HTTP receiver (a real HTTP server decoding the JSON payloads), two real instances on Redis and a
 * legacy backend over streamable HTTP. One two-round MRTR call whose retry lands on the other instance
 * and is forwarded arrives as one trace: the client's trace, round 1's request span under the client's
 * span, the backend call and its input round under it, the retry's request span under round 1 (its
 * requestState sealed it; the retry's own client trace is a link), the forward under the retry, the
 * owner's forwarded request span under the forward. The backend gets `traceparent`; no span carries an
 * argument, an answer, a requestState or a secret; the log lines of a request carry its trace id.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LegacyBackend } from '../../src/core/backend/legacy-backend.js';
import { startTracing, type Tracing } from '../../src/otel-sdk.js';
import { traceFields } from '../../src/util/tracing.js';
import { VERSION } from '../../src/version.js';
import { startLegacyHttpServer, type LegacyHttpServer } from '../fixtures/legacy-http.js';
import { startCluster } from '../helpers/cluster.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { captureLog } from '../helpers/log.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { redisPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const ARG = 'arg-secret-5f1c9e77';
const ANSWER = 'answer-secret-a84d0b13';
/** The client's trace (round 1 carries it) and another trace its retry carries. */
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const RETRY_TRACE = '5cf92f3577b34da6a3ce929d0e0e4737';
const RETRY_SPAN = '11f067aa0ba902b8';
const SERVER = 2;
const CLIENT = 3;

const { prefix, cleanup } = redisPrefix();
let receiver: OtlpReceiver;
let tracing: Tracing;
let backend: LegacyHttpServer;
let a: RunningGateway;
let b: RunningGateway;
/** The `traceparent` of every request the backend received. */
const backendTraceparents: string[] = [];
let requestState = '';

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  tracing = startTracing({ url: receiver.url, serviceName: 'mcp-mrtr-gateway-test', serviceVersion: VERSION, sampler: 'parentbased_always_on', ratio: 1 });
  backend = await startLegacyHttpServer('traced-backend', 0, undefined, undefined, (req) => {
    const traceparent = req.headers.get('traceparent');
    if (traceparent) backendTraceparents.push(traceparent);
  });
  [a, b] = (await startCluster(['a', 'b'], { prefix, mcpServers: { legacy: { url: backend.url } } })) as [RunningGateway, RunningGateway];
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await backend?.close();
  await tracing?.shutdown();
  await receiver?.close();
  await cleanup();
});

/** Every span of the client's trace, once the six of the call have arrived (the SDK flushed until then). */
async function callTrace(): Promise<ReceivedSpan[]> {
  const ofTrace = (): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === CLIENT_TRACE);
  await until(
    'the six spans of the call at the receiver',
    async () => {
      await tracing.flush();
      return ofTrace().length >= 6;
    },
    15_000,
  );
  return ofTrace();
}

function one(spans: ReceivedSpan[], what: string, match: (s: ReceivedSpan) => boolean): ReceivedSpan {
  const found = spans.filter(match);
  expect(
    found.map((s) => s.name),
    what,
  ).toHaveLength(1);
  return found[0]!;
}

describe('tracing across rounds and instances', () => {
  it('sends one two-round call whose retry is forwarded between instances as one trace with the expected parent/child shape', async () => {
    const first = await post(
      a.url,
      'tools/call',
      { name: 'tagged', arguments: { tag: ARG } },
      { caps: ELICIT, headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` } },
    );
    const ir = first.message['result'] as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(ir.resultType).toBe('input_required');
    requestState = ir.requestState;
    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = { name: 'tagged', arguments: { tag: ARG }, inputResponses: { [key]: { action: 'accept', content: { value: ANSWER } } }, requestState };
    const done = await post(b.url, 'tools/call', retry, { caps: ELICIT, headers: { traceparent: `00-${RETRY_TRACE}-${RETRY_SPAN}-01` } });
    expect(done.message['result']).toMatchObject({ content: [{ type: 'text', text: `tag=${ARG} answer=${ANSWER}` }] });

    const spans = await callTrace();
    const requests = spans.filter((s) => s.name === 'mcp tools/call');
    expect(requests.every((s) => s.kind === SERVER && s.attributes['mcp.tool'] === 'tagged' && s.attributes['mcp.method'] === 'tools/call')).toBe(true);
    // Round 1 on A: under the client's span.
    const round1 = one(requests, 'round 1', (s) => s.attributes['mcp.retry'] === false);
    expect(round1).toMatchObject({ parentSpanId: CLIENT_SPAN, attributes: { 'mcp.forwarded': false, 'mcp.result_type': 'input_required' } });
    // The backend call (it lasts until the backend answers, in round 2) and its input round, under round 1.
    const call = one(spans, 'the backend call', (s) => s.name === 'backend tools/call');
    expect(call).toMatchObject({
      kind: CLIENT,
      parentSpanId: round1.spanId,
      attributes: { 'mcp.backend': 'legacy', 'mcp.tool': 'tagged', 'mcp.result_type': 'complete' },
    });
    const input = one(spans, 'the input round', (s) => s.name === 'mcp input elicitation/create');
    expect(input).toMatchObject({ parentSpanId: call.spanId, attributes: { 'mcp.input.method': 'elicitation/create' } });
    expect(input.status.code ?? 0).not.toBe(2);
    // The retry on B: under round 1 (sealed in its requestState), linked to the trace its client sent.
    const round2 = one(requests, 'the retry on B', (s) => s.attributes['mcp.retry'] === true && s.attributes['mcp.forwarded'] === false);
    expect(round2.parentSpanId).toBe(round1.spanId);
    expect(round2.links).toEqual([{ traceId: RETRY_TRACE, spanId: RETRY_SPAN }]);
    // B forwards it to A, which holds the call: the forward under the retry, A's span under the forward.
    const forward = one(spans, 'the forward', (s) => s.name === 'mcp forward');
    expect(forward).toMatchObject({ kind: CLIENT, parentSpanId: round2.spanId, attributes: { 'mcp.forward.instance': 'a' } });
    const owner = one(requests, "the owner's span", (s) => s.attributes['mcp.forwarded'] === true);
    expect(owner).toMatchObject({ parentSpanId: forward.spanId, attributes: { 'mcp.retry': true, 'mcp.result_type': 'complete' } });
    // Nothing of the call's trace is left outside this shape.
    expect(spans.map((s) => s.spanId).sort()).toEqual([round1, call, input, round2, forward, owner].map((s) => s.spanId).sort());
    // The backend's tools/call request carried the backend call span's trace context.
    expect(backendTraceparents).toContain(`00-${CLIENT_TRACE}-${call.spanId}-01`);
  });

  it('puts no argument value, answer, requestState or secret into any exported span', async () => {
    expect(requestState).not.toBe('');
    expect(receiver.payloads.length).toBeGreaterThan(0);
    const exported = receiver.payloads.join('\n');
    for (const secret of [ARG, ANSWER, requestState, `cluster-secret-${prefix}`]) expect(exported).not.toContain(secret);
    // The elicitation the backend sent (its message holds the argument) is not in any attribute either.
    const values = receiver.spans.flatMap((s) => Object.values(s.attributes).map(String));
    expect(values.filter((v) => v.includes('secret') || v.includes('tag:'))).toEqual([]);
  });
});

describe('span names', () => {
  it("name a request by MCP's own method, and anything a client made up as other", async () => {
    const traceparent = '00-6cf92f3577b34da6a3ce929d0e0e4738-22f067aa0ba902b9-01';
    const r = await post(a.url, 'made/up-4f9c', {}, { headers: { traceparent } });
    expect(r.message['error']).toMatchObject({ code: -32601 });
    const ofTrace = () => receiver.spans.filter((sp) => sp.traceId === '6cf92f3577b34da6a3ce929d0e0e4738');
    await until('the span of the made-up method', async () => (await tracing.flush(), ofTrace().length > 0), 15_000);
    expect(ofTrace().map((sp) => sp.name)).toEqual(['mcp other']);
  });
});

describe('pool waits', () => {
  it("are a span of the waiting call's trace, under its backend call", async () => {
    const gw = await startGateway({ mcpServers: { legacy: { ...stdioFixture(), maxSessions: 1 } } });
    try {
      const pool = gw.gateway.backends[0] as LegacyBackend;
      const parked = (await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT })).message['result'] as {
        requestState: string;
        inputRequests: Record<string, unknown>;
      };
      const trace = '8af92f3577b34da6a3ce929d0e0e473a';
      const queued = post(
        gw.url,
        'tools/call',
        { name: 'echo', arguments: { text: 'queued' } },
        { caps: ELICIT, headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } },
      );
      await until('a caller to queue for the one session', () => pool.stats.waiting === 1, 10_000);
      const key = Object.keys(parked.inputRequests)[0]!;
      const answer = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: parked.requestState };
      await post(gw.url, 'tools/call', answer, { caps: ELICIT }); // the parked call ends: its session goes to the queued one
      expect((await queued).message['result']).toMatchObject({ content: [{ text: 'queued' }] });
      const ofTrace = (): ReceivedSpan[] => receiver.spans.filter((sp) => sp.traceId === trace);
      await until(
        "the queued call's three spans",
        async () => {
          await tracing.flush();
          return ofTrace().length >= 3;
        },
        10_000,
      );
      const spans = ofTrace();
      const request = one(spans, 'the request', (sp) => sp.name === 'mcp tools/call');
      const call = one(spans, 'the backend call', (sp) => sp.name === 'backend tools/call');
      const wait = one(spans, 'the pool wait', (sp) => sp.name === 'backend pool wait');
      expect(call.parentSpanId).toBe(request.spanId);
      expect(wait).toMatchObject({ parentSpanId: call.spanId, attributes: { 'mcp.backend': 'legacy' } });
    } finally {
      await gw.close();
    }
  });
});

describe('log lines with tracing on', () => {
  it("carry the trace id of the request they belong to: the exchange lines of every round, the backend exchange's and the backend's own request's debug lines", async () => {
    // As main.ts builds its logger when tracing is on; a stdio backend: one process serves call after call.
    const { lines, logger } = captureLog('debug', traceFields);
    const gw = await startGateway({ mcpServers: { legacy: { ...stdioFixture(), maxSessions: 1 } } }, { logger });
    try {
      const first = '6df92f3577b34da6a3ce929d0e0e4738';
      const second = '9bf92f3577b34da6a3ce929d0e0e473b';
      const traced = (trace: string) => ({ caps: ELICIT, headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } });
      // The first call starts the backend's process; the second's lines must not fall into the first's trace.
      const echoed = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, traced(first));
      expect(echoed.message['result']).toMatchObject({ content: [{ type: 'text', text: 'hi' }] });
      const parked = (await post(gw.url, 'tools/call', { name: 'elicit_name' }, traced(second))).message['result'] as {
        requestState: string;
        inputRequests: Record<string, unknown>;
      };
      const key = Object.keys(parked.inputRequests)[0]!;
      const answer = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: parked.requestState };
      // The retry sends no traceparent: its requestState carries the call's trace.
      expect((await post(gw.url, 'tools/call', answer, { caps: ELICIT })).message['result']).toMatchObject({ content: [{ text: 'Hello, Ada!' }] });
      await until('the three exchange lines', () => lines.filter((l) => l['msg'] === 'mcp' && l['method'] === 'tools/call').length === 3);
      const traceOf = (msg: string) =>
        lines.filter((l) => l['msg'] === msg && l['method'] !== 'initialize').map((l) => [l['name'] ?? l['method'], l['traceId']]);
      expect(lines.filter((l) => l['msg'] === 'mcp').map((l) => l['principal'])).toEqual(['anonymous', 'anonymous', 'anonymous']);
      expect(traceOf('mcp')).toEqual([
        ['echo', first],
        ['elicit_name', second],
        ['elicit_name', second],
      ]);
      expect(traceOf('backend request').filter(([m]) => m === 'tools/call')).toEqual([
        ['tools/call', first],
        ['tools/call', second],
      ]);
      expect(traceOf('backend asked')).toEqual([['elicitation/create', second]]);
      // Lines outside any request (start-up, the backend's connect) carry none.
      expect(lines.filter((l) => l['msg'] === 'backend connected' || l['msg'] === 'gateway listening').some((l) => l['traceId'] !== undefined)).toBe(false);
    } finally {
      await gw.close();
    }
  });
});

describe('legacy sessions', () => {
  it("join the client's traceparent (streamable HTTP and 2024-11-05 HTTP+SSE), and their log lines carry the request's trace id", async () => {
    const { lines, logger } = captureLog('info', traceFields);
    const gw = await startGateway({ mcpServers: { legacy: stdioFixture() } }, { logger });
    const traces = { http: '7af92f3577b34da6a3ce929d0e0e4739', sse: '8af92f3577b34da6a3ce929d0e0e473a' } as const;
    try {
      for (const [kind, trace] of Object.entries(traces)) {
        const requestInit = { headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } };
        const transport =
          kind === 'sse'
            ? new SSEClientTransport(new URL('/sse', gw.url), { requestInit })
            : new StreamableHTTPClientTransport(new URL(gw.url), { requestInit });
        const client = new Client({ name: `legacy-${kind}`, version: '1.0.0' });
        await client.connect(transport);
        try {
          expect(await client.callTool({ name: 'echo', arguments: { text: kind } })).toMatchObject({ content: [{ text: kind }] });
        } finally {
          await client.close();
        }
      }
      const span = (trace: string) => receiver.spans.find((s) => s.name === 'mcp tools/call' && s.attributes['mcp.front'] === 'legacy' && s.traceId === trace);
      await until("the legacy request spans in the clients' traces", async () => {
        await tracing.flush();
        return span(traces.http) !== undefined && span(traces.sse) !== undefined;
      });
      for (const trace of Object.values(traces))
        expect(span(trace)).toMatchObject({ kind: SERVER, parentSpanId: CLIENT_SPAN, attributes: { 'mcp.tool': 'echo' } });
      const line = (trace: string) =>
        lines.find((l) => l['msg'] === 'mcp' && l['front'] === 'legacy' && l['method'] === 'tools/call' && l['traceId'] === trace);
      await until('the legacy exchange lines', () => line(traces.http) !== undefined && line(traces.sse) !== undefined);
      for (const trace of Object.values(traces))
        expect(line(trace)).toMatchObject({ spanId: span(trace)!.spanId, resultType: 'complete', principal: 'anonymous' });
    } finally {
      await gw.close();
    }
  });

  it("give each request of a 2025-era session (the v1 SDK client) its server span, with the backend call's span under it", async () => {
    const client = new Client({ name: 'legacy-traced', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    await client.connect(new StreamableHTTPClientTransport(new URL(a.url)));
    try {
      expect(await client.callTool({ name: 'echo', arguments: { text: 'legacy' } })).toMatchObject({ content: [{ text: 'legacy' }] });
      expect(await client.callTool({ name: 'elicit_name', arguments: {} })).toMatchObject({ content: [{ text: 'Hello, Ada!' }] });
    } finally {
      await client.close();
    }
    const isLegacyCall = (s: ReceivedSpan): boolean => s.name === 'mcp tools/call' && s.attributes['mcp.front'] === 'legacy';
    await until('the legacy request span at the receiver', async () => {
      await tracing.flush();
      return receiver.spans.some(isLegacyCall);
    });
    const request = receiver.spans.find(isLegacyCall)!;
    expect(request).toMatchObject({ kind: SERVER, attributes: { 'mcp.tool': 'echo', 'mcp.result_type': 'complete' } });
    await until('its backend call span', async () => {
      await tracing.flush();
      return receiver.spans.some((s) => s.parentSpanId === request.spanId && s.kind === CLIENT && s.name === 'backend tools/call');
    });
    // A call with an input round is still one request: one server span, its backend call and input round under it.
    const asked = (): ReceivedSpan[] => receiver.spans.filter((s) => isLegacyCall(s) && s.attributes['mcp.tool'] === 'elicit_name');
    await until('the elicitation call span', async () => {
      await tracing.flush();
      return asked().length > 0;
    });
    expect(asked()).toHaveLength(1);
    const inTrace = receiver.spans.filter((s) => s.traceId === asked()[0]!.traceId).map((s) => s.name);
    expect(inTrace).toEqual(expect.arrayContaining(['mcp tools/call', 'backend tools/call', 'mcp input elicitation/create']));
  });
});
