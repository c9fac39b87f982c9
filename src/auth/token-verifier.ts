/**
 * OAuth 2.1 access tokens as a resource server checks them (MCP authorization; RFC 9068 JWT access
 * tokens): the issuer is one configured, the signature verifies with that issuer's keys under an
 * allow-list of asymmetric algorithms (never `none`, never an HMAC whose secret would be a public key),
 * `aud` names this gateway's resource URI (RFC 8707), `exp` and `nbf` hold within a small tolerance,
 * and `sub` is a non-empty string. The principal is issuer and subject together, so two issuers' subjects never
 * meet. Failures come back as reasons for the log; the client is only told the token is invalid.
 */
import { decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import { err, ok, type Result } from '../util/result.js';
import { issuerKeys, type IssuerSettings, type KeyFetchSettings } from './issuer-keys.js';

export interface TokenSettings extends KeyFetchSettings {
  /** This gateway's canonical resource URI: every token's `aud` must name it. */
  readonly resource: string;
  readonly authorizationServers: readonly IssuerSettings[];
  readonly algorithms: readonly string[];
  readonly clockToleranceSeconds: number;
  /** Require `typ: at+jwt` (RFC 9068 §4). */
  readonly requireAccessTokenType?: boolean | undefined;
}

/** Who a valid token speaks for. */
export interface TokenIdentity {
  /** `<iss>#<sub>`: what requestState, tasks, sessions and quotas are bound to. */
  readonly principal: string;
  readonly scopes: ReadonlySet<string>;
}

export type TokenRefusal =
  'malformed' | 'unknown_issuer' | 'expired' | 'not_yet_valid' | 'audience' | 'signature' | 'algorithm' | 'claims' | 'keys_unavailable';

export type TokenVerifier = (token: string) => Promise<Result<TokenIdentity, TokenRefusal>>;

/** True when `token` reads as a JWT (JWS compact, a JSON claims set): the kind this verifier checks. */
export function isJwt(token: string): boolean {
  try {
    decodeJwt(token);
    return true;
  } catch {
    return false;
  }
}

export function createTokenVerifier(settings: TokenSettings): TokenVerifier {
  const keysOf = new Map(settings.authorizationServers.map((s) => [s.issuer, issuerKeys(s, settings)]));
  return async (token) => {
    let claims: JWTPayload;
    try {
      claims = decodeJwt(token);
    } catch {
      return err('malformed');
    }
    const keys = typeof claims.iss === 'string' ? keysOf.get(claims.iss) : undefined;
    if (!keys) return err('unknown_issuer');
    try {
      const { payload } = await jwtVerify(token, await keys(), {
        issuer: claims.iss!,
        audience: settings.resource,
        algorithms: [...settings.algorithms],
        clockTolerance: settings.clockToleranceSeconds,
        requiredClaims: ['exp', 'sub'],
        ...(settings.requireAccessTokenType ? { typ: 'at+jwt' } : {}),
      });
      // jose checks that `sub` is there, not what it is: a number would be the principal of the same string.
      if (typeof payload.sub !== 'string' || payload.sub === '') return err('claims');
      return ok({ principal: `${payload.iss!}#${payload.sub}`, scopes: scopesOf(payload) });
    } catch (e) {
      return err(refusalOf(e));
    }
  };
}

/** The scopes a token's claims (or an introspection answer) grant: `scope` (space-separated, RFC 9068, RFC 7662) or `scp` (a list or a string). */
export function scopesOf(payload: Readonly<Record<string, unknown>>): Set<string> {
  const raw = payload['scope'] ?? payload['scp'];
  const list = Array.isArray(raw) ? raw.filter((s): s is string => typeof s === 'string') : typeof raw === 'string' ? raw.split(' ') : [];
  return new Set(list.filter(Boolean));
}

function refusalOf(e: unknown): TokenRefusal {
  if (e instanceof errors.JWTExpired) return 'expired';
  if (e instanceof errors.JWTClaimValidationFailed) return e.claim === 'nbf' ? 'not_yet_valid' : e.claim === 'aud' ? 'audience' : 'claims';
  if (e instanceof errors.JOSEAlgNotAllowed || e instanceof errors.JOSENotSupported) return 'algorithm';
  if (e instanceof errors.JWKSTimeout || (e instanceof Error && !(e instanceof errors.JOSEError))) return 'keys_unavailable';
  // jose's own failures to fetch the key set (an answer other than 200, a body that is no JSON: a proxy's
  // error page) are its bare JOSEError; what is wrong with a token is always one of its subclasses.
  if (e instanceof errors.JOSEError && Object.getPrototypeOf(e) === errors.JOSEError.prototype) return 'keys_unavailable';
  if (e instanceof errors.JWKSNoMatchingKey || e instanceof errors.JWSSignatureVerificationFailed) return 'signature';
  return 'malformed';
}
