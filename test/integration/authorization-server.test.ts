/**
 * The authorization-server fixture (issue 29's proof needs a real one): oidc-provider issues JWT access
 * tokens by client credentials for a resource (RFC 8707), verifiable with jose through its JWKS; it
 * rotates keys behind the same issuer; it counts JWKS fetches. And the SDK v2 client's
 * `ClientCredentialsProvider` goes through the MCP authorization dance against it headless: a 401 with
 * `resource_metadata` (RFC 9728), the AS metadata (RFC 8414), a client-credentials token request carrying
 * `resource` and `scope`, then the bearer token on the retried request — shown with a tiny resource
 * server on node:http, not the gateway (the gateway side is built elsewhere).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { createRemoteJWKSet, generateKeyPair, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';

const CLIENT = { clientId: 'svc-reporting', clientSecret: 'secret-1f4e2a', scopes: ['mcp:tools', 'mcp:admin'] } as const;

describe('authorization server fixture', () => {
  const RESOURCE = 'http://127.0.0.1:7/mcp';
  let as: AuthorizationServer;
  beforeAll(async () => {
    as = await startAuthorizationServer({ clients: [CLIENT], resources: [{ uri: RESOURCE, scopes: ['mcp:tools', 'mcp:read'] }] });
  });
  afterAll(() => as?.close());

  const verify = (token: string, jwks = createRemoteJWKSet(new URL(as.jwksUri))) =>
    jwtVerify(token, jwks, { issuer: as.issuer, audience: RESOURCE, algorithms: ['ES256'], typ: 'at+jwt' });

  it('issues a client-credentials JWT for the resource: iss, aud, sub = client id, only the scopes both client and resource allow', async () => {
    const token = await as.token({ ...CLIENT, resource: RESOURCE, scope: 'mcp:tools mcp:read mcp:admin' });
    const { payload, protectedHeader } = await verify(token);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt', kid: as.signingKey.kid });
    expect(payload).toMatchObject({ iss: as.issuer, aud: RESOURCE, sub: CLIENT.clientId, client_id: CLIENT.clientId, scope: 'mcp:tools' });
    expect(payload.exp! - payload.iat!).toBe(300);
  });

  it('refuses an unknown resource (invalid_target) and a wrong secret (invalid_client)', async () => {
    await expect(as.token({ ...CLIENT, resource: 'http://127.0.0.1:7/other', scope: 'mcp:tools' })).rejects.toThrow(/invalid_target/);
    await expect(as.token({ ...CLIENT, clientSecret: 'wrong', resource: RESOURCE })).rejects.toThrow(/invalid_client/);
  });

  it('serves its metadata at both RFC 8414 and OpenID discovery URLs', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const metadata = (await (await fetch(`${as.issuer}${path}`)).json()) as Record<string, unknown>;
      expect(metadata).toMatchObject({ issuer: as.issuer, token_endpoint: as.tokenEndpoint, jwks_uri: as.jwksUri });
    }
  });

  it('signs with the key it exposes: a token crafted with signingKey verifies', async () => {
    const key = as.signingKey;
    const forged = await new SignJWT({ scope: 'mcp:read' })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(as.issuer)
      .setAudience(RESOURCE)
      .setSubject('someone-else')
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(key.privateKey);
    expect((await verify(forged)).payload.sub).toBe('someone-else');
  });

  it('rotates keys behind the same issuer: one JWKS refetch for the new kid, none for unknown kids within the cooldown', async () => {
    const jwks = createRemoteJWKSet(new URL(as.jwksUri), { cooldownDuration: 0 });
    const before = as.jwksRequests();
    const old = await as.token({ ...CLIENT, resource: RESOURCE, scope: 'mcp:tools' });
    await verify(old, jwks);
    await verify(old, jwks);
    expect(as.jwksRequests()).toBe(before + 1);

    const oldKid = as.signingKey.kid;
    const next = await as.rotateKeys();
    expect(next.kid).not.toBe(oldKid);
    expect(as.signingKey.kid).toBe(next.kid);
    const fresh = await as.token({ ...CLIENT, resource: RESOURCE, scope: 'mcp:tools' });
    expect((await verify(fresh, jwks)).protectedHeader.kid).toBe(next.kid);
    expect(as.jwksRequests()).toBe(before + 2);
    // keepPrevious (the default): the old key stays published, so the old token still verifies.
    await verify(old, jwks);
    expect(as.jwksRequests()).toBe(before + 2);

    // jose's default 30 s cooldown: a flood of unknown kids right after a fetch costs no further fetch.
    const cooled = createRemoteJWKSet(new URL(as.jwksUri));
    await verify(fresh, cooled);
    const stranger = await generateKeyPair('ES256');
    for (let i = 0; i < 20; i++) {
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: `unknown-${i}` })
        .setIssuer(as.issuer)
        .setAudience(RESOURCE)
        .sign(stranger.privateKey);
      await expect(verify(token, cooled)).rejects.toThrow(/no applicable key found/);
    }
    expect(as.jwksRequests()).toBe(before + 3);

    const only = await as.rotateKeys({ keepPrevious: false });
    const published = (await (await fetch(as.jwksUri)).json()) as { keys: { kid: string }[] };
    expect(published.keys.map((k) => k.kid)).toEqual([only.kid]);
  });
});

/** One request the client made, through the transport's `fetch` (MCP requests and auth requests alike). */
interface Sent {
  method: string;
  url: string;
  authorization: string | null;
  body?: Record<string, string>;
}

/**
 * A minimal protected resource: PRM at /.well-known/oauth-protected-resource/mcp; /mcp answers 401 with
 * the challenge until a bearer token verifies (jose, against the fixture's JWKS), then answers any
 * JSON-RPC request with an empty result.
 */
async function startResourceServer(issuer: () => string, jwksUri: () => string) {
  const bearers: string[] = [];
  const server = createServer((req, res) => void handle(req, res).catch(() => res.writeHead(500).end()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const resource = `${origin}/mcp`;
  const prm = `${origin}/.well-known/oauth-protected-resource/mcp`;
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;

  async function authorized(header: string | undefined): Promise<JWTPayload | undefined> {
    const token = /^Bearer (.+)$/.exec(header ?? '')?.[1];
    if (!token) return undefined;
    jwks ??= createRemoteJWKSet(new URL(jwksUri()));
    return jwtVerify(token, jwks, { issuer: issuer(), audience: resource, algorithms: ['ES256'] }).then(
      (r) => r.payload,
      () => undefined,
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.url === '/.well-known/oauth-protected-resource/mcp') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource, authorization_servers: [issuer()], scopes_supported: ['mcp:tools'], bearer_methods_supported: ['header'] }));
      return;
    }
    if (req.url !== '/mcp' || req.method !== 'POST') return void res.writeHead(404).end();
    if (!(await authorized(req.headers.authorization))) {
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${prm}"` }).end();
      return;
    }
    bearers.push(req.headers.authorization!);
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string };
    if (message.id === undefined) return void res.writeHead(202).end();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: {} }));
  }

  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return { origin, resource, prm, bearers, close };
}

function recordingFetch(sent: Sent[]): typeof fetch {
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const headers = new Headers(init?.headers);
    const body = init?.body instanceof URLSearchParams ? Object.fromEntries(init.body) : undefined;
    sent.push({ method: init?.method ?? 'GET', url, authorization: headers.get('authorization'), ...(body ? { body } : {}) });
    return fetch(input, init);
  };
}

describe('SDK v2 ClientCredentialsProvider against the fixture', () => {
  let as: AuthorizationServer | undefined;
  let rs: Awaited<ReturnType<typeof startResourceServer>>;
  beforeAll(async () => {
    rs = await startResourceServer(
      () => as!.issuer,
      () => as!.jwksUri,
    );
    as = await startAuthorizationServer({ clients: [CLIENT], resources: [{ uri: rs.resource, scopes: ['mcp:tools'] }] });
  });
  afterAll(async () => {
    await rs?.close();
    await as?.close();
  });

  it('meets the 401, reads PRM then RFC 8414 metadata, gets a token with resource and scope, and retries with it', async () => {
    const sent: Sent[] = [];
    const authProvider = new ClientCredentialsProvider({ clientId: CLIENT.clientId, clientSecret: CLIENT.clientSecret, expectedIssuer: as!.issuer });
    const transport = new StreamableHTTPClientTransport(new URL(rs.resource), { authProvider, fetch: recordingFetch(sent) });
    const received: JSONRPCMessage[] = [];
    transport.onmessage = (m) => received.push(m);
    await transport.start();
    try {
      await transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    } finally {
      await transport.close();
    }

    expect(received).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    const basic = `Basic ${Buffer.from(`${CLIENT.clientId}:${CLIENT.clientSecret}`).toString('base64')}`;
    expect(sent.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `POST ${rs.resource}`,
      `GET ${rs.prm}`,
      `GET ${as!.issuer}/.well-known/oauth-authorization-server`,
      `POST ${as!.tokenEndpoint}`,
      `POST ${rs.resource}`,
    ]);
    expect(sent[0]!.authorization).toBeNull();
    expect(sent[3]).toMatchObject({ authorization: basic, body: { grant_type: 'client_credentials', scope: 'mcp:tools', resource: rs.resource } });
    const access = authProvider.tokens()!.access_token;
    expect(sent[4]!.authorization).toBe(`Bearer ${access}`);
    expect(rs.bearers).toEqual([`Bearer ${access}`]);
  });
});
