/**
 * Who is calling, from the `Authorization` header: a static API key (its principal from the config),
 * or, with `gateway.oauth`, an OAuth 2.1 access token: a JWT verified locally (token-verifier.ts), or,
 * with `gateway.oauth.introspection`, an opaque token asked of the authorization server (RFC 7662,
 * introspection.ts); principal `<iss>#<sub>` either way. A JWT is never introspected: it is checked
 * where it stands, so the authorization server is no hard dependency of every new JWT.
 * Without either, everyone is `anonymous`. A refusal carries its HTTP status and the
 * `WWW-Authenticate` challenge MCP clients follow (RFC 6750 §3, RFC 9728 §5.1): 401 with
 * `resource_metadata` (where to learn which authorization server to ask), 403 `insufficient_scope` with
 * the scopes needed. Tokens and keys are never logged; a refused token's reason is, at info.
 * Keys are looked up by their SHA-256 (never compared as text): the hash is the runtime's (node:crypto,
 * synchronous, on Node: key-hash-node.ts; Web Crypto at the edge, the default: key-hash.ts).
 */
import type { GatewaySettings } from '../config.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Result } from '../util/result.js';
import { webKeyHash, type KeyHash } from './key-hash.js';
import { createIntrospector, type IntrospectionSettings } from './introspection.js';
import { resourceMetadataUrl } from './resource-metadata.js';
import { createTokenVerifier, isJwt, type TokenIdentity, type TokenSettings } from './token-verifier.js';

export interface OAuthSettings extends TokenSettings {
  /** Scopes every token must grant (also announced in the metadata and the challenges). */
  readonly requiredScopes: readonly string[];
  /** Opaque tokens are introspected here (`issuer` defaults to the first authorization server). */
  readonly introspection?: (Omit<IntrospectionSettings, 'issuer'> & { readonly issuer?: string | undefined }) | undefined;
}

/** `gateway.oauth` with the introspection client's secret (from `secrets`, where parseConfig put it). */
export function oauthSettingsOf(oauth: GatewaySettings['oauth'], secrets: ReadonlyMap<string, string>): OAuthSettings | undefined {
  if (!oauth) return undefined;
  const { introspection, ...rest } = oauth;
  if (!introspection) return rest;
  const { clientSecretEnv, ...client } = introspection;
  return { ...rest, introspection: { ...client, clientSecret: secrets.get(clientSecretEnv) ?? '' } };
}

/** JWTs verified locally; other tokens introspected when an introspection endpoint is configured. */
function accessTokenVerifier(oauth: OAuthSettings): (token: string) => Promise<Result<TokenIdentity, string>> {
  const jwt = createTokenVerifier(oauth);
  const i = oauth.introspection;
  if (!i) return jwt;
  const introspect = createIntrospector(
    { ...i, issuer: i.issuer ?? oauth.authorizationServers[0]!.issuer },
    {
      resource: oauth.resource,
      issuers: oauth.authorizationServers.map((s) => s.issuer),
      clockToleranceSeconds: oauth.clockToleranceSeconds,
      timeoutMs: oauth.timeoutMs,
    },
  );
  return (token) => (isJwt(token) ? jwt(token) : introspect(token));
}

export type AuthOutcome =
  | {
      readonly ok: true;
      readonly principal: string;
      readonly scopes?: ReadonlySet<string> | undefined;
      /** The key names its own callers (`delegates`): a front such as the edge handler. */
      readonly delegates?: boolean | undefined;
    }
  | { readonly ok: false; readonly status: 401 | 403; readonly message: string; readonly challenge: string }
  /** The token could not be checked (its authorization server is away): 503, retry the same token. */
  | { readonly ok: false; readonly status: 503; readonly error: GatewayError };

export type Authenticate = (authorization: string | undefined) => Promise<AuthOutcome>;

const ANONYMOUS: AuthOutcome = { ok: true, principal: 'anonymous' };

/** Why a token was not checked, not why it was refused: its keys or its introspection could not be had. */
const UNCHECKED: ReadonlySet<string> = new Set(['keys_unavailable', 'introspection_unavailable']);

export function createAuthenticator(
  apiKeys: ReadonlyMap<string, string>,
  oauth: OAuthSettings | undefined,
  log: Logger,
  keyHash: KeyHash = webKeyHash,
  delegating: ReadonlySet<string> = new Set(),
): Authenticate {
  if (apiKeys.size === 0 && !oauth) return () => Promise.resolve(ANONYMOUS);
  let table: Promise<Map<string, string>> | undefined;
  const byHash = (): Promise<Map<string, string>> =>
    (table ??= Promise.all([...apiKeys].map(async ([key, principal]) => [await keyHash(key), principal] as const)).then((e) => new Map(e)));
  const verify = oauth ? accessTokenVerifier(oauth) : undefined;
  const challenge = oauth ? challengesOf(oauth) : undefined;
  const noKey = (message: string, extra = ''): AuthOutcome => ({
    ok: false,
    status: 401,
    message,
    challenge: challenge ? challenge.unauthorized(extra) : 'Bearer',
  });
  return async (authorization) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) return noKey(missingMessage(oauth !== undefined, apiKeys.size > 0));
    const keyed = (await byHash()).get(await keyHash(m[1]!));
    if (keyed !== undefined) return delegating.has(keyed) ? { ok: true, principal: keyed, delegates: true } : { ok: true, principal: keyed };
    if (!verify || !challenge || !oauth) return noKey('Unauthorized: a valid Bearer API key is required');
    const verified = await verify(m[1]!);
    if (!verified.ok) {
      // An authorization server that cannot be reached says nothing of the token: a client told
      // invalid_token would get another (and fail the same), so it is told to retry this one.
      if (UNCHECKED.has(verified.error)) {
        log.warn({ reason: verified.error }, 'access token not checked: its authorization server cannot be reached');
        return { ok: false, status: 503, error: new GatewayError('authorization_unavailable') };
      }
      log.info({ reason: verified.error }, 'access token refused');
      return noKey('Unauthorized: the access token is not valid for this gateway', ', error="invalid_token"');
    }
    const missing = oauth.requiredScopes.filter((s) => !verified.value.scopes.has(s));
    if (missing.length) {
      return { ok: false, status: 403, message: `Forbidden: the access token lacks the scope ${missing.join(' ')}`, challenge: challenge.insufficient() };
    }
    return { ok: true, principal: verified.value.principal, scopes: verified.value.scopes };
  };
}

/** What a request without credentials is told it needs: what this gateway takes. */
function missingMessage(oauth: boolean, keys: boolean): string {
  if (!oauth) return 'Unauthorized: a valid Bearer API key is required';
  return keys ? 'Unauthorized: an OAuth access token or an API key (Bearer) is required' : 'Unauthorized: an OAuth access token (Bearer) is required';
}

/** The challenges of an OAuth-protected gateway. */
function challengesOf(oauth: OAuthSettings): { unauthorized(extra: string): string; insufficient(): string } {
  const metadata = `resource_metadata="${resourceMetadataUrl(oauth.resource)}"`;
  const scope = oauth.requiredScopes.length ? `, scope="${oauth.requiredScopes.join(' ')}"` : '';
  return {
    unauthorized: (extra) => `Bearer ${metadata}${scope}${extra}`,
    insufficient: () => `Bearer error="insufficient_scope"${scope}, ${metadata}`,
  };
}
