/**
 * The gateway's client-credentials token source against a real authorization server (oidc-provider on
 * 127.0.0.1), on a clock the test moves: one fetch for many concurrent requests, the token kept until
 * shortly before it expires, then renewed in the background while the old one is still sent, a new
 * one at once when expired or refused (401), and a failing endpoint explained without the secret.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClientCredentials, type ClientCredentialsOptions } from '../../src/auth/client-credentials.js';
import { silentLogger } from '../../src/log.js';
import { freePort } from '../helpers/processes.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';
import { until } from '../helpers/until.js';

const CLIENT = { clientId: 'gw', clientSecret: 'gw-secret-5e1c0a9b77', scopes: ['files'] };
const RESOURCE = 'http://127.0.0.1:7/mcp';
let as: AuthorizationServer;
beforeAll(async () => {
  as = await startAuthorizationServer({ clients: [CLIENT], resources: [{ uri: RESOURCE, scopes: ['files'] }], accessTokenTtlSeconds: 100 });
});
afterAll(() => as?.close());

function source(clock: { t: number }, overrides: Partial<ClientCredentialsOptions> = {}) {
  return createClientCredentials({
    tokenUrl: as.tokenEndpoint,
    clientId: CLIENT.clientId,
    clientSecret: CLIENT.clientSecret,
    scope: 'files',
    resource: RESOURCE,
    timeoutMs: 5_000,
    backend: 'files',
    logger: silentLogger,
    now: () => clock.t,
    ...overrides,
  });
}

describe('client-credentials token source', () => {
  it('fetches once for concurrent requests and keeps the token (aud = the resource, the scope asked)', async () => {
    const clock = { t: Date.now() };
    const creds = source(clock);
    const before = as.tokenRequests();
    const tokens = await Promise.all([creds.token(), creds.token(), creds.token()]);
    expect(new Set(tokens).size).toBe(1);
    expect(decodeJwt(tokens[0]!)).toMatchObject({ aud: RESOURCE, sub: CLIENT.clientId, scope: 'files' });
    clock.t += 50_000;
    expect(await creds.token()).toBe(tokens[0]);
    expect(as.tokenRequests()).toBe(before + 1);
    creds.close();
  });

  it('renews shortly before expiry in the background, sending the old token meanwhile; waits for a new one once expired', async () => {
    const clock = { t: Date.now() };
    const creds = source(clock);
    const first = await creds.token();
    const before = as.tokenRequests();
    clock.t += 85_000; // past 80 % of 100 s
    expect(await creds.token()).toBe(first);
    await until('the background renewal', () => as.tokenRequests() === before + 1);
    await until('the renewed token to be handed out', async () => (await creds.token()) !== first);
    const second = await creds.token();
    clock.t += 200_000; // both expired
    const third = await creds.token();
    expect(third).not.toBe(second);
    expect(as.tokenRequests()).toBe(before + 2);
    creds.close();
  });

  it('drops a refused token (the next request fetches a new one), but not a newer one', async () => {
    const clock = { t: Date.now() };
    const creds = source(clock);
    const first = await creds.token();
    creds.refused(first);
    const second = await creds.token();
    expect(second).not.toBe(first);
    creds.refused(first); // a late 401 for the old token
    expect(await creds.token()).toBe(second);
    creds.close();
  });

  it('explains a refusing or unreachable endpoint without the secret, and fetches again on the next request', async () => {
    const clock = { t: Date.now() };
    const wrong = source(clock, { clientSecret: 'wrong-secret-123456' });
    const e1 = (await wrong.token().catch((e: unknown) => e)) as Error;
    expect(e1.message).toMatch(/token endpoint of backend files refused the client credentials: HTTP 401 invalid_client/);
    expect(e1.message).not.toContain('wrong-secret-123456');
    const before = as.tokenRequests();
    await wrong.token().catch(() => undefined);
    expect(as.tokenRequests()).toBe(before + 1);
    const port = await freePort();
    const down = source(clock, { tokenUrl: `http://127.0.0.1:${port}/token` });
    await expect(down.token()).rejects.toThrow(new RegExp(`token endpoint of backend files is unreachable: http://127.0.0.1:${port}/token: .*ECONNREFUSED`));
  });

  it("stops waiting on the caller's signal, and refuses once closed", async () => {
    const clock = { t: Date.now() };
    const creds = source(clock);
    const gone = AbortSignal.abort(new Error('caller went away'));
    await expect(creds.token(gone)).rejects.toThrow('caller went away');
    creds.close();
    await expect(creds.token()).rejects.toMatchObject({ code: 'gateway_closing' });
  });
});
