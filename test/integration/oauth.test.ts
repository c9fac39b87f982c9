/**
 * The gateway as an OAuth 2.1 resource server in front of a real legacy stdio backend, with a real
 * authorization server (oidc-provider, in-process on 127.0.0.1) issuing JWT access tokens for the
 * gateway's resource by client credentials: the Protected Resource Metadata and the 401/403
 * challenges; a valid token, and tokens that are expired, for another audience, from another issuer,
 * unsigned, HMAC-signed with the public key; a rotated key; API keys beside OAuth; two principals that
 * never share a call; and the SDK v2 client with its OAuth provider, going from the 401 to a tool call
 * with elicitation on its own.
 */
import { createServer, type AddressInfo } from 'node:net';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SignJWT, exportSPKI } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { post, type WireReply } from '../helpers/wire.js';

const ALICE = { clientId: 'alice-app', clientSecret: 'alice-secret-0123456789', scopes: ['mcp'] };
const BOB = { clientId: 'bob-app', clientSecret: 'bob-secret-0123456789', scopes: ['mcp'] };
const NARROW = { clientId: 'narrow-app', clientSecret: 'narrow-secret-0123456789', scopes: ['reports'] };
const READONLY = { clientId: 'readonly-app', clientSecret: 'readonly-secret-0123456789', scopes: ['mcp', 'readonly'] };
const API_KEY = 'ops-key-0123456789abcdef';
let as: AuthorizationServer;
let gw: RunningGateway;
let resource: string;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

beforeAll(async () => {
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  as = await startAuthorizationServer({ clients: [ALICE, BOB, NARROW, READONLY], resources: [{ uri: resource, scopes: ['mcp', 'reports', 'readonly'] }] });
  gw = await startGateway(
    {
      mcpServers: { legacy: stdioFixture() },
      gateway: {
        coalesceMs: 0,
        apiKeys: [{ principal: 'ops', key: API_KEY }],
        oauth: { resource, authorizationServers: [{ issuer: as.issuer }], requiredScopes: ['mcp'], cooldownMs: 0 },
        policy: { rules: [{ scopes: ['readonly'], deny: { tools: ['elicit_*'] } }] },
      },
    },
    { port },
  );
});
afterAll(async () => {
  await gw?.close();
  await as?.close();
});

const tokenOf = (c: typeof ALICE, scope = 'mcp') => as.token({ clientId: c.clientId, clientSecret: c.clientSecret, resource, scope });

function call(token: string | undefined, params: Record<string, unknown>, method = 'tools/call'): Promise<WireReply> {
  return post(gw.url, method, params, { caps: { elicitation: {} }, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

/** A token signed with the authorization server's own key, its claims as given. */
async function forged(claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const key = as.signingKey;
  return new SignJWT({ scope: 'mcp', iss: as.issuer, sub: 'alice-app', aud: resource, iat: now, exp: now + 300, ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header })
    .sign(key.privateKey);
}

describe('OAuth 2.1 in front', () => {
  it('serves the Protected Resource Metadata and challenges a request without a token toward it', async () => {
    const metadataUrl = `${new URL(resource).origin}/.well-known/oauth-protected-resource/mcp`;
    for (const url of [metadataUrl, `${new URL(resource).origin}/.well-known/oauth-protected-resource`]) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(await res.json()).toMatchObject({ resource, authorization_servers: [as.issuer], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
    }
    const none = await call(undefined, { name: 'echo', arguments: { text: 'x' } });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", scope="mcp"`);
    // API keys work beside OAuth here: the refusal names both
    expect(JSON.stringify(none.message)).toContain('an OAuth access token or an API key (Bearer) is required');
  });

  it('serves a valid token; its principal is issuer and subject', async () => {
    const r = await call(await tokenOf(ALICE), { name: 'echo', arguments: { text: 'hi' } });
    expect(r.message['result']).toMatchObject({ content: [{ text: 'hi' }] });
  });

  it('refuses an expired token, another audience, another issuer, alg none and HMAC with the public key, each with invalid_token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const hmacSecret = new TextEncoder().encode(await exportSPKI(as.signingKey.publicKey));
    const bad = {
      expired: await forged({ exp: now - 600, iat: now - 900 }),
      notYetValid: await forged({ nbf: now + 600 }),
      audience: await forged({ aud: 'http://127.0.0.1:1/mcp' }),
      issuer: await forged({ iss: 'http://127.0.0.1:1' }),
      none: `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(JSON.stringify({ iss: as.issuer, sub: 'x', aud: resource, exp: now + 300, scope: 'mcp' })).toString('base64url')}.`,
      hmac: await new SignJWT({ iss: as.issuer, sub: 'x', aud: resource, exp: now + 300, scope: 'mcp' })
        .setProtectedHeader({ alg: 'HS256', kid: as.signingKey.kid })
        .sign(hmacSecret),
    };
    for (const [what, token] of Object.entries(bad)) {
      const r = await call(token, { name: 'echo', arguments: { text: 'x' } });
      expect(r.status, what).toBe(401);
      expect(r.headers.get('www-authenticate'), what).toMatch(/^Bearer resource_metadata="[^"]+", scope="mcp", error="invalid_token"$/);
    }
  });

  it('answers a token without the required scope 403 insufficient_scope, naming the scope', async () => {
    const r = await call(await tokenOf(NARROW, 'reports'), { name: 'echo', arguments: { text: 'x' } });
    expect(r.status).toBe(403);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer error="insufficient_scope", scope="mcp", resource_metadata="/);
  });

  it('takes tokens signed with a rotated key (the key set fetched again for the new kid)', async () => {
    const before = as.jwksRequests();
    await as.rotateKeys();
    const r = await call(await tokenOf(ALICE), { name: 'echo', arguments: { text: 'rotated' } });
    expect(r.message['result']).toMatchObject({ content: [{ text: 'rotated' }] });
    expect(as.jwksRequests()).toBe(before + 1);
  });

  it('applies gateway.policy rules by token scope: a readonly token neither lists nor calls the elicit tools', async () => {
    const readonly = await tokenOf(READONLY, 'mcp readonly');
    const names = ((await call(readonly, {}, 'tools/list')).message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toContain('echo');
    expect(names.filter((n) => n.startsWith('elicit_'))).toEqual([]);
    expect((await call(readonly, { name: 'elicit_name' })).message['error']).toMatchObject({ data: { reason: 'forbidden' } });
    // The same client with only `mcp` is not under the rule.
    const full = ((await call(await tokenOf(READONLY), {}, 'tools/list')).message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(full).toContain('elicit_name');
  });

  it('keeps API keys working beside OAuth', async () => {
    const r = await call(API_KEY, { name: 'echo', arguments: { text: 'key' } });
    expect(r.message['result']).toMatchObject({ content: [{ text: 'key' }] });
  });

  it("never lets one user continue another's call: bob's retry of alice's round is refused, alice's goes on", async () => {
    const alice = await tokenOf(ALICE);
    const ir = (await call(alice, { name: 'elicit_name' })).message['result'] as { requestState: string };
    const retry = { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'Mallory' } } }, requestState: ir.requestState };
    expect((await call(await tokenOf(BOB), retry)).message['error']).toMatchObject({ data: { reason: 'request_state_principal' } });
    const done = await call(alice, { ...retry, inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } } });
    expect(done.message['result']).toMatchObject({ content: [{ text: 'Hello, Alice!' }] });
  });

  it('lets the SDK v2 client with its OAuth provider find its way from the 401 to a tool call with elicitation', async () => {
    const authProvider = new ClientCredentialsProvider({ clientId: ALICE.clientId, clientSecret: ALICE.clientSecret, expectedIssuer: as.issuer });
    const client = new Client(
      { name: 'oauth-client', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { authProvider }));
    try {
      const result = await client.callTool({ name: 'elicit_name', arguments: {} });
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    } finally {
      await client.close();
    }
  });
});

describe('OAuth 2.1 in front, its authorization server away', () => {
  it('answers a token it cannot check 503 authorization_unavailable with Retry-After (retry it), never invalid_token (get another)', async () => {
    // The keys are served where nothing listens: every token's check fails for want of them.
    const away = await startGateway({
      mcpServers: { legacy: stdioFixture() },
      gateway: { oauth: { resource, authorizationServers: [{ issuer: as.issuer, jwksUri: 'http://127.0.0.1:1/jwks' }], timeoutMs: 500, cooldownMs: 0 } },
    });
    try {
      const token = await tokenOf(ALICE);
      const r = await post(away.url, 'tools/list', {}, { headers: { authorization: `Bearer ${token}` } });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.headers.get('www-authenticate')).toBeNull();
      expect(r.message['error']).toMatchObject({ code: -32603, data: { reason: 'authorization_unavailable' } });
      const ready = await fetch(away.url.replace(/\/mcp$/, '/readyz'), { headers: { authorization: `Bearer ${token}` } });
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ error: expect.stringMatching(/authorization server cannot be reached/) });
      // A token that is no JWT at all is still refused as such.
      const bad = await post(away.url, 'tools/list', {}, { headers: { authorization: 'Bearer not-a-token' } });
      expect(bad.status).toBe(401);
    } finally {
      await away.close();
    }
  });
});
