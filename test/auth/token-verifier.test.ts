/**
 * The access-token checks against a real JWKS endpoint and authorization server metadata (node:http on
 * 127.0.0.1, keys made with jose): a valid token, and each way one is refused (expired, not yet valid,
 * another audience, an unknown issuer, `alg: none`, HMAC with the public key as its secret, an unknown
 * kid); a rotated key is fetched once, a flood of made-up kids is not.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier, type TokenSettings } from '../../src/auth/token-verifier.js';

const RESOURCE = 'http://127.0.0.1:8787/mcp';
let server: Server;
let issuer: string;
let jwks: JWK[] = [];
let jwksFetches = 0;
let key: { privateKey: CryptoKey; publicJwk: JWK };

async function newKey(kid: string): Promise<{ privateKey: CryptoKey; publicJwk: JWK }> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  return { privateKey: pair.privateKey, publicJwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/jwks') {
      jwksFetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: jwks }));
    } else if (req.url === '/.well-known/oauth-authorization-server') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    } else if (req.url === '/jwks-proxy-error') {
      // A proxy in front of an authorization server that is away.
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>');
    } else if (req.url === '/jwks-not-json') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  key = await newKey('k1');
  jwks = [key.publicJwk];
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const settings = (over: Partial<TokenSettings> = {}): TokenSettings => ({
  resource: RESOURCE,
  authorizationServers: [{ issuer }],
  algorithms: ['ES256', 'RS256'],
  clockToleranceSeconds: 5,
  timeoutMs: 2_000,
  cooldownMs: 30_000,
  ...over,
});

function token(claims: Record<string, unknown> = {}, opts: { kid?: string; signWith?: CryptoKey; exp?: string | number } = {}): Promise<string> {
  return new SignJWT({ scope: 'mcp tools', sub: 'user-1', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: opts.kid ?? 'k1', typ: 'at+jwt' })
    .setIssuer(String(claims['iss'] ?? issuer))
    .setAudience(String(claims['aud'] ?? RESOURCE))
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? '5m')
    .sign(opts.signWith ?? key.privateKey);
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('access tokens', () => {
  it('accepts a token of the configured issuer for this resource: principal <iss>#<sub>, its scopes (jwks_uri from the metadata)', async () => {
    const verify = createTokenVerifier(settings());
    const r = await verify(await token());
    expect(r).toEqual({ ok: true, value: { principal: `${issuer}#user-1`, scopes: new Set(['mcp', 'tools']) } });
  });

  it('refuses an expired token, one not yet valid, one for another audience, one from an unknown issuer', async () => {
    const verify = createTokenVerifier(settings());
    const now = Math.floor(Date.now() / 1000);
    expect(await verify(await token({}, { exp: now - 60 }))).toEqual({ ok: false, error: 'expired' });
    expect(await verify(await token({ nbf: now + 600 }))).toEqual({ ok: false, error: 'not_yet_valid' });
    expect(await verify(await token({ aud: 'http://127.0.0.1:9999/mcp' }))).toEqual({ ok: false, error: 'audience' });
    expect(await verify(await token({ iss: 'http://127.0.0.1:1/other' }))).toEqual({ ok: false, error: 'unknown_issuer' });
    // Within the tolerance (5 s) an expiry just past still passes.
    expect((await verify(await token({}, { exp: now - 2 }))).ok).toBe(true);
    expect(await verify('not-a-jwt')).toEqual({ ok: false, error: 'malformed' });
  });

  it('refuses a subject that is not a non-empty string (RFC 7519 StringOrURI): 123 and "123" would be one principal', async () => {
    const verify = createTokenVerifier(settings());
    for (const sub of [123, { a: 1 }, ['x'], '', null]) expect(await verify(await token({ sub })), JSON.stringify(sub)).toEqual({ ok: false, error: 'claims' });
    expect((await verify(await token({ sub: '123' }))).ok).toBe(true);
  });

  it('requires typ at+jwt when configured (RFC 9068): another JWT of the issuer with this audience is not an access token', async () => {
    const strict = createTokenVerifier(settings({ requireAccessTokenType: true }));
    expect((await strict(await token())).ok).toBe(true); // at+jwt
    const idLike = await new SignJWT({ scope: 'mcp' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'JWT' })
      .setIssuer(issuer)
      .setSubject('user-1')
      .setAudience(RESOURCE)
      .setExpirationTime('5m')
      .sign(key.privateKey);
    expect((await strict(idLike)).ok).toBe(false);
    expect((await createTokenVerifier(settings())(idLike)).ok).toBe(true);
  });

  it('refuses alg none and an HMAC token whose secret is the public key', async () => {
    const verify = createTokenVerifier(settings());
    const claims = { iss: issuer, sub: 'user-1', aud: RESOURCE, exp: Math.floor(Date.now() / 1000) + 300, scope: 'mcp' };
    expect((await verify(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`)).ok).toBe(false);
    const secret = new TextEncoder().encode(JSON.stringify(key.publicJwk));
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(secret);
    expect(await verify(hs)).toEqual({ ok: false, error: 'algorithm' });
  });

  it('fetches the key set again for a rotated key, once; a flood of unknown kids does not refetch within the cooldown', async () => {
    const verify = createTokenVerifier(settings({ cooldownMs: 0 }));
    expect((await verify(await token())).ok).toBe(true);
    const fetched = jwksFetches;
    const rotated = await newKey('k2');
    jwks = [key.publicJwk, rotated.publicJwk];
    expect((await verify(await token({}, { kid: 'k2', signWith: rotated.privateKey }))).ok).toBe(true);
    expect(jwksFetches).toBe(fetched + 1);

    const guarded = createTokenVerifier(settings({ cooldownMs: 60_000 }));
    expect((await guarded(await token())).ok).toBe(true);
    const before = jwksFetches;
    const bogus = await newKey('nobody');
    for (let i = 0; i < 50; i++)
      expect(await guarded(await token({}, { kid: `made-up-${i}`, signWith: bogus.privateKey }))).toEqual({ ok: false, error: 'signature' });
    expect(jwksFetches - before).toBeLessThanOrEqual(1);
  });

  it('says the keys are unavailable when a proxy before the issuer answers 502, or the key set is no JSON (a maintenance page)', async () => {
    for (const path of ['/jwks-proxy-error', '/jwks-not-json']) {
      const verify = createTokenVerifier(settings({ authorizationServers: [{ issuer, jwksUri: `${issuer}${path}` }] }));
      expect(await verify(await token())).toEqual({ ok: false, error: 'keys_unavailable' });
    }
  });

  it('says the keys are unavailable when the issuer cannot be reached, and tries again on the next token', async () => {
    const verify = createTokenVerifier(settings({ authorizationServers: [{ issuer, jwksUri: 'http://127.0.0.1:1/jwks' }] }));
    expect(await verify(await token())).toEqual({ ok: false, error: 'keys_unavailable' });
  });
});
