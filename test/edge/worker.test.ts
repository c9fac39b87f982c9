/**
 * The edge handler, built (scripts/edge-bundle.mjs) and run in workerd (miniflare), in front of a real
 * Node session core (the gateway with `gateway.core`: a legacy stdio backend and the proxy tools, each
 * served alone) and a real 2026-07-28 HTTP server: discovery, lists from both, two-round elicitations
 * whose retry lands on a second edge instance, a listen stream, a tampered retry refused at the edge, a
 * configuration the edge cannot serve, the callers named to the core (forwardPrincipal), and OAuth.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEdgeWorker, type EdgeWorker } from '../../scripts/edge-run.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleEdge } from '../../scripts/edge-bundle.mjs';
import { randomStateKey } from '../../src/protocol/request-state.js';
import { anySignal } from '../../src/util/abort.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';
import { connectClient, firstText, startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/processes.js';
import { readyzThroughOutage } from '../helpers/readiness.js';
import { postInitialize, post as wirePost } from '../helpers/wire.js';

const STATE_KEY = Buffer.alloc(32, 11).toString('base64url');
const CAPS = { elicitation: {} };

type Edge = EdgeWorker;

/** One edge instance in workerd from the bundle already built in `dir`. */
const startEdge = (dir: string, bindings: Record<string, unknown>, port?: number): Promise<Edge> =>
  startEdgeWorker(dir, bindings, { bundle: false, ...(port !== undefined ? { port } : {}) });

/** One 2026-07-28 request by hand (the SDK client answers input rounds itself; here the retry is steered). */
async function post(
  url: string,
  id: number,
  method: string,
  params: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const reply = await wirePost(url, method, params, { id, caps: CAPS, headers });
  return { status: reply.status, body: reply.message };
}

describe('the edge handler in workerd', () => {
  let dir: string;
  let core: RunningGateway;
  let modern: { url: string; close(): Promise<void> };
  let edgeA: Edge;
  let edgeB: Edge;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'edge-worker-'));
    await bundleEdge(join(dir, 'worker.js'));
    core = await startGateway(
      { mcpServers: { legacy: stdioFixture() }, gateway: { core: true, proxyTools: { enabled: true } } },
      { stateKeys: [await randomStateKey()] },
    );
    modern = await startModernServer();
    const bindings = {
      MCP_GATEWAY_STATE_KEYS: STATE_KEY,
      MCP_GATEWAY_CONFIG: {
        mcpServers: {
          // The core serves each of its servers alone (gateway.core): the edge names and aggregates them.
          legacy: { url: `${core.url}/legacy`, protocol: '2026-07-28' },
          proxy: { url: `${core.url}/proxy`, protocol: '2026-07-28' },
          modern: { url: modern.url, protocol: '2026-07-28' },
        },
      },
    };
    [edgeA, edgeB] = await Promise.all([startEdge(dir, bindings), startEdge(dir, bindings)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([edgeA?.close(), edgeB?.close()]);
    await core?.close();
    await modern?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('discovers and lists the tools of the servers of the core (the proxy tools among them) and of the modern server, with the SDK v2 client', async () => {
    const client = await connectClient(edgeA.url, CAPS);
    try {
      expect(client.getServerVersion()?.name).toBe('mcp-mrtr-gateway-edge');
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['legacy__elicit_name', 'proxy__execute_tool', 'modern__confirm', 'modern__plain']));
      const plain = await client.callTool({ name: 'modern__plain', arguments: { text: 'hi' } });
      expect(firstText(plain as { content?: unknown })).toBe('modern:hi');
    } finally {
      await client.close();
    }
  });

  it('carries a legacy backend elicitation edge → core → stdio backend over two rounds, the retry served by another edge instance', async () => {
    const first = await post(edgeA.url, 1, 'tools/call', { name: 'legacy__elicit_name', arguments: {} });
    const result = first.body['result'] as Record<string, unknown>;
    expect(result['resultType']).toBe('input_required');
    const [key] = Object.keys(result['inputRequests'] as object);
    const retry = await post(edgeB.url, 2, 'tools/call', {
      name: 'legacy__elicit_name',
      arguments: {},
      requestState: result['requestState'],
      inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } },
    });
    expect(retry.body['result']).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Hello, Ada!' }] });
  });

  it('carries a modern server its own input round, and the SDK client drives it', async () => {
    const client = await connectClient(edgeB.url, CAPS);
    client.setRequestHandler('elicitation/create' as never, (() => ({ action: 'accept', content: { ok: true } })) as never);
    try {
      const r = await client.callTool({ name: 'modern__confirm', arguments: { what: 'launch' } });
      expect(firstText(r as { content?: unknown })).toBe('confirmed launch ok=true');
    } finally {
      await client.close();
    }
  });

  it('relays a backend list change to a listen stream opened at the edge (each stream follows the backends itself)', async () => {
    const stop = new AbortController();
    const res = await fetch(edgeA.url, {
      method: 'POST',
      // A bound for this stream as a whole (generous: a loaded machine), so a lost relay fails, not hangs.
      signal: anySignal([stop.signal, AbortSignal.timeout(30_000)]),
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true },
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
        },
      }),
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    const until = async (text: string): Promise<void> => {
      while (!seen.includes(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before ${text}: ${seen}`);
        seen += value;
      }
    };
    try {
      await until('notifications/subscriptions/acknowledged');
      const changed = await post(edgeB.url, 10, 'tools/call', { name: 'legacy__trigger_tool_change', arguments: {} });
      expect(changed.body['result']).toMatchObject({ resultType: 'complete' });
      await until('notifications/tools/list_changed');
    } finally {
      stop.abort();
      await reader.cancel().catch(() => undefined);
    }
  });

  it('refuses a tampered requestState at the edge, and one sealed for another request', async () => {
    const first = await post(edgeA.url, 3, 'tools/call', { name: 'legacy__elicit_name', arguments: {} });
    const state = (first.body['result'] as Record<string, unknown>)['requestState'] as string;
    const tampered = `${state.slice(0, -4)}${state.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const answers = { user_name: { action: 'accept', content: { name: 'Eve' } } };
    const bad = await post(edgeB.url, 4, 'tools/call', { name: 'legacy__elicit_name', arguments: {}, requestState: tampered, inputResponses: answers });
    expect(bad.body['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_invalid' } });
    const other = await post(edgeB.url, 5, 'tools/call', { name: 'legacy__elicit_name', arguments: { x: 1 }, requestState: state, inputResponses: answers });
    expect(other.body['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_request' } });
  });

  it('tells a 2025-era client (initialize) that it serves 2026-07-28 only, offering no session it does not serve', async () => {
    const res = await postInitialize(edgeA.url, 'v1');
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: number; message: string; data: unknown } };
    expect(body.error).toMatchObject({ code: -32022, data: { supported: ['2026-07-28'], requested: '2025-11-25' } });
    expect(body.error.message).toMatch(/serves MCP 2026-07-28 only/);
  });

  it('answers 500 without details when its bindings cannot be served (a stdio server, no state keys)', async () => {
    const bad = await startEdge(dir, { MCP_GATEWAY_CONFIG: JSON.stringify({ mcpServers: { local: { command: 'node', args: ['x.js'] } } }) });
    try {
      const r = await post(bad.url, 6, 'server/discover', {});
      expect(r.status).toBe(500);
      expect(r.body['error']).toMatchObject({ code: -32603, message: 'The edge handler is misconfigured (its log says how)' });
    } finally {
      await bad.close();
    }
  });
});

describe("the edge handler's /readyz", () => {
  it('asks the servers again on each request: a server that answered before and went away is shown down, and up again once it is back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edge-worker-'));
    await bundleEdge(join(dir, 'worker.js'));
    const port = await freePort();
    let modern = await startModernServer(undefined, port);
    const edge = await startEdge(dir, {
      MCP_GATEWAY_STATE_KEYS: STATE_KEY,
      MCP_GATEWAY_CONFIG: { mcpServers: { modern: { url: modern.url, protocol: '2026-07-28' } } },
    });
    try {
      const answered = async (): Promise<void> => void expect((await post(edge.url, 1, 'tools/list', {})).body['result']).toBeDefined();
      modern = await readyzThroughOutage(edge.url, answered, modern, () => startModernServer(undefined, port));
    } finally {
      await edge.close();
      await modern.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the edge handler naming its callers to a session core (forwardPrincipal, a delegating key)', () => {
  const EDGE_KEY = 'edge-key-0123456789abcdef';
  const OPS_KEY = 'ops-key-0123456789abcdefg';
  const keys = { alice: 'alice-key-0123456789ab', bob: 'bob-key-0123456789abcd' };
  const as = (who: keyof typeof keys): Record<string, string> => ({ authorization: `Bearer ${keys[who]}` });
  let dir: string;
  let core: RunningGateway;
  let edge: Edge;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'edge-worker-'));
    await bundleEdge(join(dir, 'worker.js'));
    // One parked call per principal at the core: the edge's callers must count apart there.
    core = await startGateway({
      mcpServers: { legacy: stdioFixture() },
      gateway: {
        core: true,
        maxParkedPerPrincipal: 1,
        apiKeys: [
          { principal: 'edge', key: EDGE_KEY, delegates: true },
          { principal: 'ops', key: OPS_KEY },
        ],
      },
    });
    edge = await startEdge(dir, {
      MCP_GATEWAY_STATE_KEYS: STATE_KEY,
      ALICE_KEY: keys.alice,
      BOB_KEY: keys.bob,
      CORE_KEY: EDGE_KEY,
      MCP_GATEWAY_CONFIG: {
        mcpServers: { legacy: { url: `${core.url}/legacy`, protocol: '2026-07-28', forwardPrincipal: true, headers: { Authorization: 'Bearer ${CORE_KEY}' } } },
        gateway: {
          apiKeys: [
            { principal: 'alice', keyEnv: 'ALICE_KEY' },
            { principal: 'bob', keyEnv: 'BOB_KEY' },
          ],
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await edge?.close();
    await core?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps each caller apart at the core: a parked call of alice does not count against bob, and alice is refused her second', async () => {
    const park = (who: keyof typeof keys, id: number) => post(edge.url, id, 'tools/call', { name: 'elicit_name', arguments: {} }, as(who));
    expect((await park('alice', 1)).body['result']).toMatchObject({ resultType: 'input_required' });
    expect((await park('bob', 2)).body['result']).toMatchObject({ resultType: 'input_required' });
    expect((await park('alice', 3)).body['error']).toMatchObject({ data: { reason: 'parked_call_limit' } });
  });

  it('runs a delegating key without the header as the key, refuses the header with any other key (fail closed) and a malformed name', async () => {
    const legacy = `${core.url}/legacy`;
    const delegating = { authorization: `Bearer ${EDGE_KEY}` };
    expect((await post(legacy, 4, 'tools/list', {}, delegating)).body['result']).toMatchObject({ resultType: 'complete' });
    const other = await post(legacy, 5, 'tools/list', {}, { authorization: `Bearer ${OPS_KEY}`, 'mcp-gateway-principal': 'carol' });
    expect(other.status).toBe(403);
    expect(JSON.stringify(other.body)).toContain('needs an API key that delegates');
    const malformed = await post(legacy, 6, 'tools/list', {}, { ...delegating, 'mcp-gateway-principal': '%E0%A4%A' });
    expect(malformed.status).toBe(400);
    const control = await post(legacy, 7, 'tools/list', {}, { ...delegating, 'mcp-gateway-principal': 'a%0Ab' });
    expect(control.status).toBe(400);
  });
});

describe('the edge handler with OAuth (gateway.oauth from its bindings; JWTs checked in workerd against the JWKS)', () => {
  const ALICE = { clientId: 'alice-app', clientSecret: 'alice-secret-0123456789', scopes: ['mcp'] };
  let as: AuthorizationServer;
  let modern: { url: string; close(): Promise<void> };
  let dir: string;
  let edge: Edge;
  let resource: string;

  beforeAll(async () => {
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    as = await startAuthorizationServer({ clients: [ALICE], resources: [{ uri: resource, scopes: ['mcp'] }] });
    modern = await startModernServer();
    dir = mkdtempSync(join(tmpdir(), 'edge-worker-'));
    await bundleEdge(join(dir, 'worker.js'));
    const config = {
      mcpServers: { modern: { url: modern.url, protocol: '2026-07-28' } },
      gateway: { oauth: { resource, authorizationServers: [{ issuer: as.issuer }], requiredScopes: ['mcp'], cooldownMs: 0 } },
    };
    edge = await startEdge(dir, { MCP_GATEWAY_STATE_KEYS: STATE_KEY, MCP_GATEWAY_CONFIG: config }, port);
  }, 60_000);

  afterAll(async () => {
    await edge?.close();
    await modern?.close();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves its resource metadata, challenges a caller without a token, and serves one with a token of the authorization server', async () => {
    const metadata = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', resource));
    expect(await metadata.json()).toMatchObject({ resource, authorization_servers: [as.issuer] });
    const none = await post(edge.url, 1, 'tools/list', {});
    expect(none.status).toBe(401);
    const forged = await post(edge.url, 2, 'tools/list', {}, { authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.' });
    expect(forged.status).toBe(401);
    const token = await as.token({ clientId: ALICE.clientId, clientSecret: ALICE.clientSecret, resource, scope: 'mcp' });
    const listed = await post(edge.url, 3, 'tools/list', {}, { authorization: `Bearer ${token}` });
    expect((listed.body['result'] as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain('confirm');
    expect(as.jwksRequests()).toBeGreaterThan(0);
  });
});
