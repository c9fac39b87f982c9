/**
 * The gateway's own access token for one HTTP backend (issue 29, no token passthrough): the OAuth 2.0
 * client-credentials grant (RFC 6749 §4.4) at the backend's token endpoint, `client_secret_basic`, with
 * the backend's URL as the RFC 8707 `resource` unless another is configured. The token is kept until
 * shortly before `expires_in` runs out: past REFRESH_MARGIN of its life a new one is fetched in the
 * background while the old one is still sent, and once expired a request waits for the new one. A
 * token the backend refused (401) is dropped, so the next request fetches a new one. Concurrent
 * requests share one fetch; each waits no longer than its own signal, the fetch no longer than its
 * deadline. Errors say why (the endpoint's HTTP status and OAuth error), never the secret or a token.
 */
import { GatewayError } from '../errors.js';
import type { Logger } from '../log.js';
import { raceSignal } from '../util/abort.js';
import { background } from '../util/background.js';
import { describeRefusal, postForm, type ClientSecret } from './endpoint-post.js';

export interface ClientCredentialsOptions extends ClientSecret {
  readonly tokenUrl: string;
  /** Space-separated scopes asked for (none: the server's default). */
  readonly scope?: string | undefined;
  /** RFC 8707 resource indicator: the backend's URL by default. */
  readonly resource: string;
  /** Deadline of one token request. */
  readonly timeoutMs: number;
  /** Whose token (the backend's name), for errors and logs. */
  readonly backend: string;
  readonly logger: Logger;
  /** Milliseconds since the epoch (tests). */
  readonly now?: () => number;
  /**
   * Nothing in flight is shared between requests (the edge handler: workerd ties every fetch to the
   * request that made it, and one whose request ended may never settle): a request that finds no
   * valid token fetches its own, on its own signal; only a token once fetched is shared.
   */
  readonly ioPerRequest?: boolean | undefined;
}

/** A bearer token source, as core/backend's `BackendCredentials` takes it. */
export interface ClientCredentials {
  /** The current token, fetching one if there is none (or it has expired). Rejects with why, on `signal`, or once closed. */
  token(signal?: AbortSignal): Promise<string>;
  /** The backend refused `token` (401): it is dropped unless a newer one replaced it already. */
  refused(token: string): void;
  /** Ends a fetch in flight; later calls reject. Idempotent. */
  close(): void;
}

/** Lifetime assumed when the token endpoint gives no `expires_in` (RFC 6749 §5.1 makes it optional). */
const DEFAULT_LIFETIME_S = 300;
/** A token is renewed once this share of its life has passed (and at most 60 s before it expires). */
const REFRESH_MARGIN = 0.2;
const MAX_MARGIN_MS = 60_000;
/** After an early refresh failed, the next early try waits this long. */
const RETRY_MS = 5_000;

interface Held {
  readonly token: string;
  readonly refreshAt: number;
  readonly expiresAt: number;
}

export function createClientCredentials(options: ClientCredentialsOptions): ClientCredentials {
  const now = options.now ?? Date.now;
  const closer = new AbortController();
  let held: Held | undefined;
  let fetching: Promise<Held> | undefined;
  const fetchOnce = (): Promise<Held> => {
    if (!fetching) {
      fetching = requestToken(options, closer.signal, now)
        .then((next) => (held = next))
        .finally(() => (fetching = undefined));
      // Its waiters may all have gone (their signals): the failure is theirs to see, never unhandled.
      fetching.catch(() => undefined);
    }
    return fetching;
  };
  /** A refresh while `old` is still valid; when it fails, the next try waits RETRY_MS (the old token is sent meanwhile). */
  const refreshEarly = (old: Held): Promise<Held> =>
    fetchOnce().catch((e: unknown) => {
      if (held === old) held = { ...old, refreshAt: Math.min(old.expiresAt, now() + RETRY_MS) };
      throw e;
    });
  if (options.ioPerRequest) return perRequestCredentials(options, now);
  return {
    async token(signal) {
      if (closer.signal.aborted) throw new GatewayError('gateway_closing');
      const t = now();
      if (held && t < held.expiresAt) {
        if (t >= held.refreshAt && !fetching) background(`refresh the access token of backend ${options.backend}`, refreshEarly(held), options.logger);
        return held.token;
      }
      const pending = fetchOnce();
      return (await (signal ? raceSignal(pending, signal) : pending)).token;
    },
    refused(token) {
      if (held?.token === token) held = undefined;
    },
    close() {
      closer.abort(new GatewayError('gateway_closing'));
    },
  };
}

/** `createClientCredentials` with nothing in flight shared between requests (`ioPerRequest`). */
function perRequestCredentials(options: ClientCredentialsOptions, now: () => number): ClientCredentials {
  let held: Held | undefined;
  let closed = false;
  return {
    async token(signal) {
      if (closed) throw new GatewayError('gateway_closing');
      if (held && now() < held.refreshAt) return held.token;
      held = await requestToken(options, signal ?? AbortSignal.timeout(options.timeoutMs), now);
      return held.token;
    },
    refused(token) {
      if (held?.token === token) held = undefined;
    },
    close() {
      closed = true;
    },
  };
}

/** One client-credentials token request; rejects with an Error saying why (endpoint, status, OAuth error). */
async function requestToken(options: ClientCredentialsOptions, signal: AbortSignal, now: () => number): Promise<Held> {
  const form: Record<string, string> = { grant_type: 'client_credentials', resource: options.resource };
  if (options.scope !== undefined) form['scope'] = options.scope;
  const what = `the token endpoint of backend ${options.backend}`;
  const started = now();
  let answer;
  try {
    answer = await postForm(options.tokenUrl, options, form, options.timeoutMs, signal);
  } catch (e) {
    if (signal.aborted) throw new GatewayError('gateway_closing');
    throw new Error(`${what} is unreachable: ${(e as Error).message}`);
  }
  if (answer.status !== 200) throw new Error(`${what} refused the client credentials: ${describeRefusal(answer)}`);
  const { access_token: token, token_type: type, expires_in: expiresIn } = answer.body ?? {};
  if (typeof token !== 'string' || token === '') throw new Error(`${what} answered without an access_token`);
  if (typeof type !== 'string' || type.toLowerCase() !== 'bearer') throw new Error(`${what} answered token_type ${String(type)}, not Bearer`);
  const lifetimeMs = (typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn : DEFAULT_LIFETIME_S) * 1000;
  const margin = Math.min(lifetimeMs * REFRESH_MARGIN, MAX_MARGIN_MS);
  options.logger.debug({ backend: options.backend, expiresInS: lifetimeMs / 1000 }, 'backend access token fetched');
  return { token, expiresAt: started + lifetimeMs, refreshAt: started + lifetimeMs - margin };
}
