/**
 * RFC 7662 introspection of opaque tokens against a real authorization server (oidc-provider on
 * 127.0.0.1), on a clock the test moves: the principal `<iss>#<sub or client_id>` and scopes; an answer
 * cached under the token's hash for at most `cacheSeconds` and never past `exp`; one request for
 * concurrent checks of one token; an endpoint that fails is not cached; another audience, another
 * issuer and a missing subject refused.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIntrospector, type IntrospectionContext, type IntrospectionSettings } from '../../src/auth/introspection.js';
import { freePort } from '../helpers/processes.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';

const GATEWAY = { clientId: 'gw', clientSecret: 'gw-secret-5e1c0a9b77', scopes: [] };
const APP = { clientId: 'app', clientSecret: 'app-secret-5e1c0a9b77', scopes: ['mcp'] };
const RESOURCE = 'http://127.0.0.1:7/mcp';
let as: AuthorizationServer;
beforeAll(async () => {
  as = await startAuthorizationServer({ clients: [GATEWAY, APP], resources: [{ uri: RESOURCE, scopes: ['mcp'] }], accessTokenTtlSeconds: 300 });
});
afterAll(() => as?.close());

const opaque = () => as.token({ clientId: APP.clientId, clientSecret: APP.clientSecret, scope: 'mcp' });

function introspector(clock: { t: number }, overrides: Partial<IntrospectionSettings & IntrospectionContext> = {}) {
  return createIntrospector(
    // oidc-provider's opaque tokens (no resource asked for) carry no audience.
    {
      url: as.introspectionEndpoint,
      clientId: GATEWAY.clientId,
      clientSecret: GATEWAY.clientSecret,
      issuer: as.issuer,
      cacheSeconds: 60,
      audienceOptional: true,
      ...overrides,
    },
    { resource: RESOURCE, issuers: [as.issuer], clockToleranceSeconds: 0, timeoutMs: 5_000, now: () => clock.t, ...overrides },
  );
}

describe('token introspection', () => {
  it('takes an active token: principal <iss>#<client_id> (no sub for client credentials), its scopes', async () => {
    const r = await introspector({ t: Date.now() })(await opaque());
    expect(r).toEqual({ ok: true, value: { principal: `${as.issuer}#${APP.clientId}`, scopes: new Set(['mcp']) } });
  });

  it('keeps an answer at most cacheSeconds, one request for concurrent checks', async () => {
    const clock = { t: Date.now() };
    const check = introspector(clock, { cacheSeconds: 30 });
    const token = await opaque();
    const before = as.introspectionRequests();
    await Promise.all([check(token), check(token), check(token)]);
    clock.t += 29_000;
    await check(token);
    expect(as.introspectionRequests()).toBe(before + 1);
    clock.t += 2_000;
    expect((await check(token)).ok).toBe(true);
    expect(as.introspectionRequests()).toBe(before + 2);
  });

  it('keeps an answer no longer than the token lives', async () => {
    const clock = { t: Date.now() };
    const check = introspector(clock, { cacheSeconds: 3_600 });
    const token = await opaque();
    const before = as.introspectionRequests();
    await check(token);
    clock.t += 301_000; // past exp (300 s), within the cache bound
    await check(token);
    expect(as.introspectionRequests()).toBe(before + 2);
  });

  it('refuses an unknown token (inactive) and an issuer not configured', async () => {
    const clock = { t: Date.now() };
    expect(await introspector(clock)('never-issued-token-0123456789')).toEqual({ ok: false, error: 'inactive' });
    expect(await introspector(clock, { issuer: 'http://127.0.0.1:1', issuers: [] })(await opaque())).toEqual({ ok: false, error: 'unknown_issuer' });
  });

  it('refuses an active answer for another audience, or without a subject (an endpoint stub: oidc-provider issues no such opaque token)', async () => {
    const answers = [
      { active: true, iss: 'http://127.0.0.1:2', sub: 'u', aud: ['http://127.0.0.1:8/other'], exp: Math.floor(Date.now() / 1000) + 60 },
      { active: true, iss: 'http://127.0.0.1:2', aud: RESOURCE },
      { active: true, iss: 'http://127.0.0.1:2', sub: 'u' },
      { active: true, iss: 'http://127.0.0.1:3', sub: 'u', aud: RESOURCE },
    ];
    const stub = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answers.shift())));
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', () => r()));
    try {
      const check = introspector({ t: Date.now() }, { url: `http://127.0.0.1:${(stub.address() as AddressInfo).port}/`, issuer: 'http://127.0.0.1:2' });
      expect(await check('token-one')).toEqual({ ok: false, error: 'audience' });
      expect(await check('token-two')).toEqual({ ok: false, error: 'claims' });
      // No audience at all: refused unless the operator says its server gives none.
      const strict = introspector(
        { t: Date.now() },
        { url: `http://127.0.0.1:${(stub.address() as AddressInfo).port}/`, issuer: 'http://127.0.0.1:2', audienceOptional: false },
      );
      expect(await strict('token-three')).toEqual({ ok: false, error: 'audience' });
      // Another configured issuer's name in the answer: the endpoint speaks for its own issuer only.
      expect(await strict('token-four')).toEqual({ ok: false, error: 'unknown_issuer' });
    } finally {
      await new Promise((r) => stub.close(r));
    }
  });

  it('does not cache an endpoint that fails (wrong client secret, unreachable)', async () => {
    const clock = { t: Date.now() };
    const token = await opaque();
    const wrong = introspector(clock, { clientSecret: 'wrong-secret-0123456789' });
    const before = as.introspectionRequests();
    expect(await wrong(token)).toEqual({ ok: false, error: 'introspection_unavailable' });
    expect(await wrong(token)).toEqual({ ok: false, error: 'introspection_unavailable' });
    expect(as.introspectionRequests()).toBe(before + 2);
    expect(await introspector(clock, { url: `http://127.0.0.1:${await freePort()}/introspect` })(token)).toEqual({
      ok: false,
      error: 'introspection_unavailable',
    });
  });
});
