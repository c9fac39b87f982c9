/**
 * Opaque access tokens, checked by OAuth 2.0 Token Introspection (RFC 7662): the gateway asks the
 * authorization server's introspection endpoint as a confidential client (`client_secret_basic`, within
 * a deadline). A token is taken when the answer is `active: true`, names a subject (`sub`, or for a
 * client-credentials token its `client_id`, as RFC 9068 §2.2 has it), has not expired (`exp`), names
 * this gateway's resource in `aud` (RFC 8707; an answer without `aud` only with `audienceOptional`), and
 * comes from a configured issuer.
 * Answers are cached under a SHA-256 of the token (never the token itself), for at most `cacheSeconds`
 * and never past the token's `exp`; concurrent requests with one token share one introspection. An
 * endpoint that cannot be reached is not cached: the next request asks again.
 */
import { err, ok, type Result } from '../util/result.js';
import { postForm } from './endpoint-post.js';
import { scopesOf } from './token-verifier.js';
import { webKeyHash } from './key-hash.js';

export interface IntrospectionSettings {
  readonly url: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The principal's issuer when an answer names none. */
  readonly issuer: string;
  /** Longest an answer is kept (0: never). */
  readonly cacheSeconds: number;
  /** Accept an answer that names no audience (default: it must name the resource). */
  readonly audienceOptional?: boolean | undefined;
}

/** Introspections in flight at once; a flood of made-up tokens waits for none of them, it is refused. */
const MAX_IN_FLIGHT = 32;

export interface IntrospectionContext {
  /** This gateway's resource URI (the `aud` an answer must contain, if it has one). */
  readonly resource: string;
  /** Issuers an answer's `iss` may name. */
  readonly issuers: readonly string[];
  readonly clockToleranceSeconds: number;
  /** Deadline of one introspection request. */
  readonly timeoutMs: number;
  /** Milliseconds since the epoch (tests). */
  readonly now?: () => number;
}

export interface IntrospectedIdentity {
  readonly principal: string;
  readonly scopes: ReadonlySet<string>;
}

export type IntrospectionRefusal = 'inactive' | 'expired' | 'audience' | 'unknown_issuer' | 'claims' | 'introspection_unavailable';

export type Introspect = (token: string) => Promise<Result<IntrospectedIdentity, IntrospectionRefusal>>;

/** Entries kept at most; the oldest go first (a flood of distinct tokens cannot grow the cache without bound). */
const MAX_ENTRIES = 10_000;

interface Entry {
  readonly outcome: Result<IntrospectedIdentity, IntrospectionRefusal>;
  readonly until: number;
}

export function createIntrospector(settings: IntrospectionSettings, context: IntrospectionContext): Introspect {
  const now = context.now ?? Date.now;
  const cache = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<Entry | undefined>>();
  const remember = (key: string, entry: Entry | undefined): void => {
    if (!entry || entry.until <= now()) return;
    cache.delete(key);
    cache.set(key, entry);
    for (const oldest of cache.keys()) {
      if (cache.size <= MAX_ENTRIES) break;
      cache.delete(oldest);
    }
  };
  return async (token) => {
    const key = await webKeyHash(token);
    const hit = cache.get(key);
    if (hit && hit.until > now()) return hit.outcome;
    cache.delete(key);
    let pending = inFlight.get(key);
    // Anyone may send a made-up token; each costs a request to the authorization server with our
    // secret: beyond a bound in flight, refused rather than queued (the server must not lock us out).
    if (!pending && inFlight.size >= MAX_IN_FLIGHT) return err('introspection_unavailable');
    if (!pending) {
      // introspect() never rejects: an endpoint failure is an undefined entry.
      pending = introspect(token, settings, context, now)
        .then((entry) => {
          remember(key, entry);
          return entry;
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    const entry = await pending;
    return entry?.outcome ?? err('introspection_unavailable');
  };
}

/** One introspection; undefined when the endpoint gave no usable answer (nothing to cache). */
async function introspect(token: string, settings: IntrospectionSettings, context: IntrospectionContext, now: () => number): Promise<Entry | undefined> {
  let answer;
  try {
    answer = await postForm(settings.url, settings, { token, token_type_hint: 'access_token' }, context.timeoutMs);
  } catch {
    return undefined;
  }
  if (answer.status !== 200 || !answer.body) return undefined;
  const t = now();
  const bound = t + settings.cacheSeconds * 1000;
  const body = answer.body;
  if (body['active'] !== true) return { outcome: err('inactive'), until: bound };
  const exp = typeof body['exp'] === 'number' ? body['exp'] * 1000 : undefined;
  const refuse = (why: IntrospectionRefusal): Entry => ({ outcome: err(why), until: Math.min(bound, exp ?? bound) });
  if (exp !== undefined && exp + context.clockToleranceSeconds * 1000 <= t) return refuse('expired');
  const aud = body['aud'];
  if (aud === undefined ? !settings.audienceOptional : !(Array.isArray(aud) ? aud : [aud]).includes(context.resource)) return refuse('audience');
  // Only the introspection endpoint's own issuer: it cannot speak for another authorization server.
  const iss = body['iss'] === undefined ? settings.issuer : body['iss'];
  if (iss !== settings.issuer) return refuse('unknown_issuer');
  const sub = typeof body['sub'] === 'string' ? body['sub'] : body['client_id'];
  if (typeof sub !== 'string' || sub === '') return refuse('claims');
  const scopes = scopesOf(body);
  // Kept until the token expires (tolerance aside), and no longer than the bound.
  return { outcome: ok({ principal: `${iss}#${sub}`, scopes }), until: Math.min(bound, exp ?? bound) };
}
