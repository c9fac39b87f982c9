/**
 * No token passthrough (issue 29): a gateway that takes OAuth access tokens in front sends its HTTP
 * backends only their own credentials — a client-credentials token it fetches from a real
 * authorization server (oidc-provider, 127.0.0.1) for each backend's URL (RFC 8707), verified here
 * with jose against the server's JWKS — on legacy streamable HTTP, legacy SSE and 2026-07-28
 * backends. The token is reused, a 401 from the backend makes one refetch, and a token endpoint that
 * is down or refuses leaves the backend `backend_unavailable` with the cause on /readyz and in the log,
 * never the secret. Opaque tokens in front are introspected (RFC 7662): served when active, refused
 * with invalid_token when not, cached per token, and not past their expiry.
 */
import { Writable } from 'node:stream';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLegacyHttpServer, type LegacyHttpServer } from '../fixtures/legacy-http.js';
import { startLegacySseServer } from '../fixtures/legacy-sse.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { post, type WireReply } from '../helpers/wire.js';

const BACKEND_CLIENT = { clientId: 'gateway-backends', clientSecret: 'backend-secret-7f3a9c1e5b', scopes: ['files'] };
const INTROSPECTOR = { clientId: 'gateway-introspection', clientSecret: 'introspect-secret-2d8e4b6a', scopes: [] };
const ALICE = { clientId: 'alice-app', clientSecret: 'alice-secret-0123456789', scopes: ['mcp'] };
const BOB = { clientId: 'bob-app', clientSecret: 'bob-secret-0123456789', scopes: ['mcp'] };
const BRIEF = { clientId: 'brief-app', clientSecret: 'brief-secret-0123456789', scopes: ['mcp'], accessTokenTtlSeconds: 1 };
const SECRETS = [BACKEND_CLIENT, INTROSPECTOR, ALICE, BOB, BRIEF].map((c) => c.clientSecret);

let as: AuthorizationServer;
let web: LegacyHttpServer;
let sse: { url: string; close(): Promise<void> };
let modern: { url: string; close(): Promise<void> };
let gw: RunningGateway;
let broken: RunningGateway;
let resource: string;
/** Every Authorization header each backend received, in order. */
const seen: Record<'web' | 'sse' | 'modern', (string | null)[]> = { web: [], sse: [], modern: [] };
/** How many of web's next requests are answered 401 (as a backend whose key was rotated would). */
let refuseNext = 0;
const logLines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    logLines.push(chunk.toString('utf8'));
    done();
  },
});

beforeAll(async () => {
  web = await startLegacyHttpServer('web', 0, undefined, undefined, (req) => {
    seen.web.push(req.headers.get('authorization'));
    if (refuseNext > 0) {
      refuseNext--;
      return new Response('token rejected', { status: 401, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
    }
  });
  sse = await startLegacySseServer('sse', (req) => seen.sse.push(req.authorization ?? null));
  modern = await startModernServer((req) => seen.modern.push(req.headers.get('authorization')));
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  as = await startAuthorizationServer({
    clients: [BACKEND_CLIENT, INTROSPECTOR, ALICE, BOB, BRIEF],
    resources: [{ uri: resource, scopes: ['mcp'] }, ...[web.url, sse.url, modern.url].map((uri) => ({ uri, scopes: ['files'] }))],
  });
  const auth = { tokenUrl: as.tokenEndpoint, clientId: BACKEND_CLIENT.clientId, clientSecretEnv: 'BACKEND_SECRET', scope: 'files' };
  gw = await startGateway(
    {
      mcpServers: {
        web: { url: web.url, auth },
        sse: { url: sse.url, transport: 'sse', auth },
        modern: { url: modern.url, protocol: '2026-07-28', auth },
      },
      gateway: {
        coalesceMs: 0,
        healthCheckMs: 0,
        oauth: {
          resource,
          authorizationServers: [{ issuer: as.issuer }],
          requiredScopes: ['mcp'],
          introspection: { url: as.introspectionEndpoint, clientId: INTROSPECTOR.clientId, clientSecretEnv: 'INTROSPECT_SECRET', audienceOptional: true },
        },
      },
    },
    { port, env: { BACKEND_SECRET: BACKEND_CLIENT.clientSecret, INTROSPECT_SECRET: INTROSPECTOR.clientSecret }, logger: pino({ level: 'debug' }, sink) },
  );
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([web?.close(), sse?.close(), modern?.close()]);
  await as?.close();
});

const tokenOf = (c: typeof ALICE, opts: { resource?: string } = {}) =>
  as.token({ clientId: c.clientId, clientSecret: c.clientSecret, scope: 'mcp', ...(opts.resource ? { resource: opts.resource } : {}) });

function call(url: string, token: string | undefined, params: Record<string, unknown>): Promise<WireReply> {
  return post(url, 'tools/call', params, { caps: { elicitation: {} }, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

/** The backend token's claims, verified against the authorization server's keys for `audience`. */
async function backendClaims(header: string | null, audience: string) {
  expect(header).toMatch(/^Bearer \S+$/);
  const { payload } = await jwtVerify(header!.slice('Bearer '.length), createRemoteJWKSet(new URL(as.jwksUri)), {
    issuer: as.issuer,
    audience,
    algorithms: ['ES256'],
  });
  return payload;
}

describe('backend credentials (no token passthrough)', () => {
  it("never sends the client's token to a backend: each gets the gateway's own client-credentials token for its URL", async () => {
    const alice = await tokenOf(ALICE, { resource });
    for (const [name, text] of [
      ['web__echo', 'w'],
      ['sse__echo', 's'],
      ['modern__plain', 'm'],
    ] as const) {
      const r = await call(gw.url, alice, { name, arguments: { text } });
      expect(r.message['result'], name).toMatchObject({ content: [{ text: expect.stringContaining(text) }] });
    }
    for (const [backend, url] of [
      ['web', web.url],
      ['sse', sse.url],
      ['modern', modern.url],
    ] as const) {
      expect(seen[backend].length, backend).toBeGreaterThan(0);
      for (const header of seen[backend]) {
        expect(header, backend).not.toContain(alice);
        expect(await backendClaims(header, url), backend).toMatchObject({ sub: BACKEND_CLIENT.clientId, client_id: BACKEND_CLIENT.clientId, scope: 'files' });
      }
    }
  });

  it('reuses the token: more calls fetch no new one', async () => {
    const alice = await tokenOf(ALICE, { resource });
    const before = as.tokenRequests();
    const from = seen.web.length;
    for (let i = 0; i < 3; i++) expect((await call(gw.url, alice, { name: 'web__echo', arguments: { text: `again ${i}` } })).message['result']).toBeDefined();
    expect(as.tokenRequests()).toBe(before);
    expect(new Set(seen.web.slice(from)).size).toBe(1);
  });

  it('answers a 401 from the backend with one new token, and the call goes through', async () => {
    const alice = await tokenOf(ALICE, { resource });
    const before = as.tokenRequests();
    const from = seen.web.length;
    refuseNext = 1;
    const r = await call(gw.url, alice, { name: 'web__echo', arguments: { text: 'after 401' } });
    expect(r.message['result']).toMatchObject({ content: [{ text: 'after 401' }] });
    expect(as.tokenRequests()).toBe(before + 1);
    const [refused, retried] = seen.web.slice(from);
    expect(retried).not.toBe(refused);
    await backendClaims(retried!, web.url);
  });
});

describe('opaque access tokens by introspection (RFC 7662)', () => {
  it("serves an active opaque token as the same principal as the client's JWTs, and introspects it once", async () => {
    const jwt = await tokenOf(ALICE, { resource });
    const opaque = await tokenOf(ALICE);
    expect(opaque.split('.')).toHaveLength(1);
    const before = as.introspectionRequests();
    // A round begun with alice's JWT, continued with her opaque token: one principal, <iss>#<sub>.
    const ir = (await call(gw.url, jwt, { name: 'web__elicit_name' })).message['result'] as { requestState: string };
    const done = await call(gw.url, opaque, {
      name: 'web__elicit_name',
      inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } },
      requestState: ir.requestState,
    });
    expect(done.message['result']).toMatchObject({ content: [{ text: 'Hello, Alice!' }] });
    expect((await call(gw.url, opaque, { name: 'web__echo', arguments: { text: 'cached' } })).message['result']).toMatchObject({
      content: [{ text: 'cached' }],
    });
    expect(as.introspectionRequests()).toBe(before + 1);
  });

  it("does not let another principal's opaque token continue the round", async () => {
    const ir = (await call(gw.url, await tokenOf(ALICE), { name: 'web__elicit_name' })).message['result'] as { requestState: string };
    const retry = { name: 'web__elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'M' } } }, requestState: ir.requestState };
    expect((await call(gw.url, await tokenOf(BOB), retry)).message['error']).toMatchObject({ data: { reason: 'request_state_principal' } });
  });

  it('refuses an inactive token with 401 invalid_token', async () => {
    const r = await call(gw.url, 'Zm9yZ2VkLW9wYXF1ZS10b2tlbi10aGF0LXdhcy1uZXZlci1pc3N1ZWQ', { name: 'web__echo', arguments: { text: 'x' } });
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/error="invalid_token"$/);
  });

  it('does not serve a cached answer past the token’s expiry: it is introspected again and refused', async () => {
    // exp is whole seconds: a token of one second asked for late in a second has only what is left of
    // that second. Ask early in one, so the first call has most of a second.
    await until('the start of a second', () => Date.now() % 1000 < 200, 2_000);
    const issuedAt = Date.now();
    const brief = await tokenOf(BRIEF);
    const before = as.introspectionRequests();
    expect((await call(gw.url, brief, { name: 'web__echo', arguments: { text: 'brief' } })).message['result']).toBeDefined();
    // exp is whole seconds: one second of life ends at most two seconds after it was asked for.
    await until('the one-second token to expire', () => Date.now() > issuedAt + 2_100, 10_000);
    const r = await call(gw.url, brief, { name: 'web__echo', arguments: { text: 'too late' } });
    expect(r.status).toBe(401);
    expect(as.introspectionRequests()).toBe(before + 2);
  });
});

// Last, on a gateway of its own: its failing backends keep retrying (with backoff) at the same token
// endpoint, which would disturb the token counts above.
describe('a token endpoint that fails', () => {
  beforeAll(async () => {
    const auth = { tokenUrl: as.tokenEndpoint, clientId: BACKEND_CLIENT.clientId, clientSecretEnv: 'BACKEND_SECRET', scope: 'files' };
    const closedPort = await freePort();
    broken = await startGateway(
      {
        mcpServers: {
          down: { url: web.url, auth: { ...auth, tokenUrl: `http://127.0.0.1:${closedPort}/token` } },
          refused: { url: web.url, auth: { ...auth, clientSecretEnv: 'WRONG_SECRET' } },
        },
        gateway: { healthCheckMs: 0 },
      },
      { env: { BACKEND_SECRET: BACKEND_CLIENT.clientSecret, WRONG_SECRET: 'not-the-secret-31337' }, logger: pino({ level: 'debug' }, sink) },
    );
  });
  afterAll(async () => broken?.close());

  it('leaves a backend whose token endpoint is down or refuses backend_unavailable, saying why (never the secret)', async () => {
    for (const name of ['down__echo', 'refused__echo']) {
      const r = await post(broken.url, 'tools/call', { name, arguments: { text: 'x' } });
      expect(r.message['error'], name).toMatchObject({ data: { reason: 'backend_unavailable' } });
    }
    const body = (await (await fetch(new URL('/readyz', broken.url))).json()) as { backends: { name: string; state: string; lastError?: string }[] };
    const byName = new Map(body.backends.map((b) => [b.name, b]));
    expect(byName.get('down')).toMatchObject({
      state: 'down',
      lastError: expect.stringMatching(/token endpoint of backend down is unreachable: .*ECONNREFUSED/),
    });
    expect(byName.get('refused')).toMatchObject({
      state: 'down',
      lastError: expect.stringMatching(/token endpoint of backend refused refused the client credentials: HTTP 401 invalid_client/),
    });
    expect(JSON.stringify(body)).not.toContain('not-the-secret-31337');
  });

  it('logs no secret and no token, on either gateway', () => {
    const log = logLines.join('');
    expect(log).toMatch(/backend unavailable; retrying with backoff/);
    for (const secret of [...SECRETS, 'not-the-secret-31337']) expect(log).not.toContain(secret);
    expect(log).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
  });
});
