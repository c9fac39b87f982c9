/**
 * Where an authorization server's signing keys are: its `jwks_uri`, configured or read from its
 * metadata (RFC 8414 `/.well-known/oauth-authorization-server`, then OpenID Connect discovery), once,
 * within one deadline for all the URLs tried; a failed discovery is tried again on a request after
 * `cooldownMs` (at least a second): meanwhile requests fail at once instead of each waiting the
 * deadline out. The key set is
 * jose's remote JWKS: cached, fetched again for an unknown `kid` at most once per cooldown (a flood of
 * made-up kids does not hammer the issuer), each fetch bounded by a timeout.
 */
import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose';

export interface IssuerSettings {
  readonly issuer: string;
  readonly jwksUri?: string | undefined;
}

export interface KeyFetchSettings {
  /** Deadline of one metadata or JWKS fetch. */
  readonly timeoutMs: number;
  /** Least time between two JWKS fetches for an unknown kid. */
  readonly cooldownMs: number;
}

/** The metadata URLs of `issuer`, in the order they are tried. */
export function metadataUrlsOf(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
    `${url.origin}/.well-known/openid-configuration${path}`,
  ].filter((u, i, all) => all.indexOf(u) === i);
}

/** The `jwks_uri` the issuer's metadata names (the metadata's own `issuer` must be the one configured). */
async function discoverJwksUri(issuer: string, timeoutMs: number): Promise<string> {
  const problems: string[] = [];
  const deadline = AbortSignal.timeout(timeoutMs);
  for (const url of metadataUrlsOf(issuer)) {
    if (deadline.aborted) break;
    try {
      const res = await fetch(url, { signal: deadline, headers: { accept: 'application/json' } });
      if (!res.ok) {
        problems.push(`${url}: HTTP ${res.status}`);
        await res.body?.cancel();
        continue;
      }
      const meta = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
      if (meta.issuer !== issuer) throw new Error(`${url} names issuer ${String(meta.issuer)}`);
      if (typeof meta.jwks_uri !== 'string') throw new Error(`${url} names no jwks_uri`);
      return meta.jwks_uri;
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  throw new Error(`no authorization server metadata for ${issuer}: ${problems.join('; ')}`);
}

/** The key set of one issuer, its `jwks_uri` discovered on first use when not configured. */
export function issuerKeys(settings: IssuerSettings, fetching: KeyFetchSettings): () => Promise<JWTVerifyGetKey> {
  let keys: Promise<JWTVerifyGetKey> | undefined;
  let failed: { until: number; error: unknown } | undefined;
  const make = async (): Promise<JWTVerifyGetKey> => {
    const uri = settings.jwksUri ?? (await discoverJwksUri(settings.issuer, fetching.timeoutMs));
    return createRemoteJWKSet(new URL(uri), { timeoutDuration: fetching.timeoutMs, cooldownDuration: fetching.cooldownMs });
  };
  return () => {
    if (failed && Date.now() < failed.until) return Promise.reject(failed.error);
    keys ??= make().catch((e: unknown) => {
      keys = undefined; // a request after the cooldown tries again
      failed = { until: Date.now() + Math.max(1_000, fetching.cooldownMs), error: e };
      throw e;
    });
    return keys;
  };
}
