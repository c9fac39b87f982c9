/**
 * A real OAuth 2.1 authorization server for tests (issue 29): `oidc-provider` in-process on 127.0.0.1,
 * issuing JWT access tokens by the client-credentials grant for the resources (RFC 8707 `resource`
 * indicators) and clients the test names. It signs with a key pair this fixture generates, so tests can
 * forge tokens with that key (expired, wrong audience, …) and rotate it (a new `kid` in the JWKS). Its
 * metadata is served at both `/.well-known/oauth-authorization-server` (RFC 8414) and
 * `/.well-known/openid-configuration`; the JWKS at `/jwks`, the token endpoint at `/token`.
 *
 * Without a `resource`, a client-credentials token is opaque; the RFC 7662 introspection endpoint at
 * `/token/introspection` answers for it (to any confidential client). Token and introspection
 * requests are counted, and a client may have a lifetime of its own (short-lived tokens for expiry tests).
 *
 * Key rotation: oidc-provider fixes its keystore when constructed, so `rotateKeys()` builds a new
 * Provider with the new key (same issuer, same configuration) and swaps it in behind the same socket:
 * the port, the issuer and every URL stay the same; nothing the old Provider held is needed (JWT access
 * tokens are self-contained).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import Provider, { errors, type Adapter, type AdapterFactory, type AdapterPayload, type Configuration } from 'oidc-provider';

/** A client allowed the client-credentials grant. */
export interface AuthorizationServerClient {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The scopes this client may be granted (intersected with the requested and the resource's scopes). */
  readonly scopes: readonly string[];
  /** This client's access token lifetime in seconds (default: the server's). */
  readonly accessTokenTtlSeconds?: number;
}

/** A resource server (RFC 8707 resource indicator): tokens for it are JWTs with `aud` = `uri`. */
export interface AuthorizationServerResource {
  readonly uri: string;
  /** The scopes a token for this resource may carry. */
  readonly scopes: readonly string[];
}

export interface AuthorizationServerOptions {
  readonly clients: readonly AuthorizationServerClient[];
  readonly resources: readonly AuthorizationServerResource[];
  /** The access tokens' signature algorithm. Default `ES256`. */
  readonly alg?: 'ES256' | 'RS256';
  /** Access token lifetime in seconds. Default 300. */
  readonly accessTokenTtlSeconds?: number;
}

/** The key pair the server signs access tokens with. */
export interface SigningKey {
  readonly kid: string;
  readonly alg: 'ES256' | 'RS256';
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** The private JWK as given to oidc-provider (with `kid`, `alg`, `use: 'sig'`). */
  readonly privateJwk: JWK;
  /** The public JWK as it appears in the JWKS. */
  readonly publicJwk: JWK;
}

export interface TokenRequest {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The RFC 8707 resource indicator; omitted: oidc-provider issues an opaque token, not a JWT. */
  readonly resource?: string;
  /** Space-separated; omitted: the token carries no `scope`. */
  readonly scope?: string;
  readonly signal?: AbortSignal;
}

export interface RotateOptions {
  /** Keep the previous key in the JWKS (tokens it signed still verify). Default true. */
  readonly keepPrevious?: boolean;
}

export interface AuthorizationServer {
  /** `http://127.0.0.1:PORT`, no trailing slash: the `iss` of its tokens and its metadata's `issuer`. */
  readonly issuer: string;
  readonly jwksUri: string;
  readonly tokenEndpoint: string;
  /** The RFC 7662 introspection endpoint. */
  readonly introspectionEndpoint: string;
  /** The key tokens are signed with now (changes on `rotateKeys()`). */
  readonly signingKey: SigningKey;
  /**
   * A JWT access token by the client-credentials grant over HTTP (`client_secret_basic`).
   * Throws with the server's error body when it refuses.
   */
  token(request: TokenRequest): Promise<string>;
  /** Signs with a new key (new `kid`) from now on; returns it. Same port, same issuer. */
  rotateKeys(options?: RotateOptions): Promise<SigningKey>;
  /** How many requests its JWKS endpoint has answered since it started. */
  jwksRequests(): number;
  /** How many token requests (POST /token) it has had since it started. */
  tokenRequests(): number;
  /** How many introspection requests it has had since it started. */
  introspectionRequests(): number;
  /** Stops listening and drops every connection. Idempotent. */
  close(): Promise<void>;
}

const JWKS_PATH = '/jwks';
const TOKEN_PATH = '/token';
const INTROSPECTION_PATH = '/token/introspection';

/** A fresh signing key pair with a random `kid`. */
async function newSigningKey(alg: SigningKey['alg']): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `fixture-${crypto.randomUUID()}`;
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicKey, privateJwk, publicJwk };
}

/**
 * Per-server in-memory storage for whatever oidc-provider keeps (not the JWT access tokens, which are
 * self-contained). Passing one silences its warning about its own module-wide development adapter,
 * which every server in a test worker would share; this one lives as long as its server and outlives
 * key rotations.
 */
function memoryAdapter(): AdapterFactory {
  const store = new Map<string, { payload: AdapterPayload; expiresAt: number }>();
  return (name: string): Adapter => {
    const key = (id: string) => `${name}:${id}`;
    const live = (k: string) => {
      const entry = store.get(k);
      if (entry && entry.expiresAt <= Date.now()) store.delete(k);
      return store.get(k)?.payload;
    };
    const findBy = (field: 'uid' | 'userCode', value: string) =>
      [...store.keys()]
        .filter((k) => k.startsWith(`${name}:`))
        .map(live)
        .find((p) => p?.[field] === value);
    return {
      upsert: async (id, payload, expiresIn) => void store.set(key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity }),
      find: async (id) => live(key(id)),
      findByUid: async (uid) => findBy('uid', uid),
      findByUserCode: async (userCode) => findBy('userCode', userCode),
      consume: async (id) => void Object.assign(live(key(id)) ?? {}, { consumed: Math.floor(Date.now() / 1000) }),
      destroy: async (id) => void store.delete(key(id)),
      revokeByGrantId: async (grantId) => {
        for (const [k, { payload }] of store) if (payload.grantId === grantId) store.delete(k);
      },
    };
  };
}

/** The resource server info oidc-provider asks for, or `invalid_target` for an unknown resource. */
function resourceServerInfo(options: AuthorizationServerOptions, signing: () => SigningKey) {
  return (_ctx: unknown, indicator: string, client: { clientId: string }) => {
    const resource = options.resources.find((r) => r.uri === indicator);
    if (!resource) throw new errors.InvalidTarget();
    const known = options.clients.find((c) => c.clientId === client.clientId);
    const allowed = new Set(known?.scopes ?? []);
    const { alg, kid } = signing();
    return {
      scope: resource.scopes.filter((s) => allowed.has(s)).join(' '),
      audience: resource.uri,
      accessTokenFormat: 'jwt' as const,
      accessTokenTTL: known?.accessTokenTtlSeconds ?? options.accessTokenTtlSeconds ?? 300,
      jwt: { sign: { alg, kid } },
    };
  };
}

/** The oidc-provider configuration: client credentials + resource indicators, nothing interactive. */
function configuration(options: AuthorizationServerOptions, keys: readonly SigningKey[], adapter: AdapterFactory): Configuration {
  const current = keys[0]!;
  const ttlOf = (_ctx: unknown, _token: unknown, client: { clientId: string } | undefined): number =>
    options.clients.find((c) => c.clientId === client?.clientId)?.accessTokenTtlSeconds ?? options.accessTokenTtlSeconds ?? 300;
  return {
    adapter,
    jwks: { keys: keys.map((k) => ({ ...k.privateJwk })) } as Configuration['jwks'],
    clients: options.clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      // No client `scope` metadata: oidc-provider would want every value in its global `scopes` and then
      // refuse a request naming another; the client's scopes are applied per resource instead.
    })),
    clientDefaults: { id_token_signed_response_alg: current.alg },
    // The scopes an opaque token (no resource) may carry: any client's.
    scopes: [...new Set(['openid', 'offline_access', ...options.clients.flatMap((c) => c.scopes)])],
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: false },
      resourceIndicators: { enabled: true, getResourceServerInfo: resourceServerInfo(options, () => current) },
      // Any authenticated client may introspect (the gateway is one of the configured clients).
      introspection: { enabled: true, allowedPolicy: async () => true },
    },
    ttl: { AccessToken: ttlOf, ClientCredentials: ttlOf },
  } as Configuration;
}

/** `client_secret_basic` per RFC 6749 §2.3.1: both parts form-urlencoded before base64. */
function basicAuth(clientId: string, clientSecret: string): string {
  const encode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

async function requestToken(tokenEndpoint: string, request: TokenRequest): Promise<string> {
  const body = new URLSearchParams({ grant_type: 'client_credentials' });
  if (request.resource !== undefined) body.set('resource', request.resource);
  if (request.scope !== undefined) body.set('scope', request.scope);
  const res = await fetch(tokenEndpoint, {
    method: 'POST',
    headers: { authorization: basicAuth(request.clientId, request.clientSecret), accept: 'application/json' },
    body,
    signal: request.signal ?? AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`token endpoint answered ${res.status}: ${text}`);
  const json = JSON.parse(text) as { access_token?: unknown };
  if (typeof json.access_token !== 'string') throw new Error(`token endpoint answered without access_token: ${text}`);
  return json.access_token;
}

/** Listens on a free port of 127.0.0.1; returns `http://127.0.0.1:PORT`. */
async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * Starts the authorization server on a free port of 127.0.0.1. Throws if oidc-provider rejects the
 * configuration (a client or resource it cannot take).
 */
export async function startAuthorizationServer(options: AuthorizationServerOptions): Promise<AuthorizationServer> {
  const alg = options.alg ?? 'ES256';
  let jwksCount = 0;
  let tokenCount = 0;
  let introspectionCount = 0;
  let handler: ReturnType<Provider['callback']> | undefined;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === JWKS_PATH) jwksCount += 1;
    if (req.method === 'POST' && path === TOKEN_PATH) tokenCount += 1;
    if (req.method === 'POST' && path === INTROSPECTION_PATH) introspectionCount += 1;
    // Koa answers its own errors; a rejection here would be a bug in the fixture, answered with a 500.
    if (handler) handler(req, res).catch(() => res.headersSent || res.writeHead(500).end());
    else res.writeHead(503).end();
  });
  const issuer = await listen(server);
  let keys = [await newSigningKey(alg)];
  const adapter = memoryAdapter();
  const install = () => {
    handler = new Provider(issuer, configuration(options, keys, adapter)).callback();
  };
  try {
    install();
  } catch (error) {
    server.close();
    throw error;
  }
  let closed: Promise<void> | undefined;
  return {
    issuer,
    jwksUri: `${issuer}${JWKS_PATH}`,
    tokenEndpoint: `${issuer}${TOKEN_PATH}`,
    introspectionEndpoint: `${issuer}${INTROSPECTION_PATH}`,
    get signingKey() {
      return keys[0]!;
    },
    token: (request) => requestToken(`${issuer}${TOKEN_PATH}`, request),
    async rotateKeys({ keepPrevious = true } = {}) {
      const next = await newSigningKey(alg);
      keys = keepPrevious ? [next, keys[0]!] : [next];
      install();
      return next;
    },
    jwksRequests: () => jwksCount,
    tokenRequests: () => tokenCount,
    introspectionRequests: () => introspectionCount,
    close() {
      closed ??= new Promise<void>((resolve) => {
        handler = undefined;
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
