/**
 * Who is calling, from the `Authorization` header: a static API key (its principal from the config),
 * or, with `gateway.oauth`, an OAuth 2.1 access token (token-verifier.ts; principal `<iss>#<sub>`).
 * Without either, everyone is `anonymous`. A refusal carries its HTTP status and the
 * `WWW-Authenticate` challenge MCP clients follow (RFC 6750 §3, RFC 9728 §5.1): 401 with
 * `resource_metadata` (where to learn which authorization server to ask), 403 `insufficient_scope` with
 * the scopes needed. Tokens and keys are never logged; a refused token's reason is, at info.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../log.js';
import { resourceMetadataUrl } from './resource-metadata.js';
import { createTokenVerifier, type TokenSettings } from './token-verifier.js';

export interface OAuthSettings extends TokenSettings {
  /** Scopes every token must grant (also announced in the metadata and the challenges). */
  readonly requiredScopes: readonly string[];
}

export type AuthOutcome =
  | { readonly ok: true; readonly principal: string; readonly scopes?: ReadonlySet<string> | undefined }
  | { readonly ok: false; readonly status: 401 | 403; readonly message: string; readonly challenge: string };

export type Authenticate = (authorization: string | undefined) => Promise<AuthOutcome>;

const ANONYMOUS: AuthOutcome = { ok: true, principal: 'anonymous' };

export function createAuthenticator(apiKeys: ReadonlyMap<string, string>, oauth: OAuthSettings | undefined, log: Logger): Authenticate {
  const byHash = new Map<string, string>();
  for (const [key, principal] of apiKeys) byHash.set(sha256Hex(key), principal);
  if (byHash.size === 0 && !oauth) return () => Promise.resolve(ANONYMOUS);
  const verify = oauth ? createTokenVerifier(oauth) : undefined;
  const challenge = oauth ? challengesOf(oauth) : undefined;
  const noKey = (message: string, extra = ''): AuthOutcome => ({
    ok: false,
    status: 401,
    message,
    challenge: challenge ? challenge.unauthorized(extra) : 'Bearer',
  });
  return async (authorization) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) return noKey(oauth ? 'Unauthorized: an OAuth access token (Bearer) is required' : 'Unauthorized: a valid Bearer API key is required');
    const keyed = byHash.get(sha256Hex(m[1]!));
    if (keyed !== undefined) return { ok: true, principal: keyed };
    if (!verify || !challenge || !oauth) return noKey('Unauthorized: a valid Bearer API key is required');
    const verified = await verify(m[1]!);
    if (!verified.ok) {
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

/** The challenges of an OAuth-protected gateway. */
function challengesOf(oauth: OAuthSettings): { unauthorized(extra: string): string; insufficient(): string } {
  const metadata = `resource_metadata="${resourceMetadataUrl(oauth.resource)}"`;
  const scope = oauth.requiredScopes.length ? `, scope="${oauth.requiredScopes.join(' ')}"` : '';
  return {
    unauthorized: (extra) => `Bearer ${metadata}${scope}${extra}`,
    insufficient: () => `Bearer error="insufficient_scope"${scope}, ${metadata}`,
  };
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
