/**
 * The gateway's own credentials toward an HTTP backend (issue 29: no token passthrough). A client's
 * `Authorization` never reaches a backend: backend requests are built from the server entry alone (its
 * `headers`), and when the entry has `auth`, every request — legacy streamable HTTP, legacy SSE (the
 * event stream and its POSTs), 2026-07-28 — carries `Authorization: Bearer <token>` from a
 * `BackendCredentials` the composition root gives (an OAuth client-credentials token source, built in
 * auth/; core/backend knows only this interface). A 401 from the backend drops that token and the
 * request is sent once more with a new one.
 */

import { GatewayError } from '../../errors.js';

type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * No token could be had for a request, so it was never sent: its code is one exchange-failure.ts
 * reads as "never reached the backend" (a 2026-07-28 call is `backend_unavailable`, not `backend_closed`
 * "it may have run"). The message is the token source's (why, never a secret).
 */
export class TokenUnavailable extends Error {
  readonly code = 'ERR_BACKEND_TOKEN_UNAVAILABLE';
}

/** Where an HTTP backend's bearer tokens come from. */
export interface BackendCredentials {
  /** A token to send now. Rejects with an Error saying why (never a secret), or on `signal`. */
  token(signal?: AbortSignal): Promise<string>;
  /** The backend answered 401 to `token`: the next `token()` brings a new one. */
  refused(token: string): void;
  /** Ends any token fetch in flight (the backend is closing). Idempotent. */
  close(): void;
}

/** A body fetch can send twice (a stream is read once). */
function replayable(body: RequestInit['body']): boolean {
  return body === undefined || body === null || typeof body === 'string' || body instanceof URLSearchParams || body instanceof Uint8Array;
}

/**
 * `inner` sending the backend's bearer token (replacing any `Authorization` already set); a 401 is
 * answered by one more try with a new token. Without credentials, `inner` untouched.
 */
export function withCredentials(inner: FetchLike, credentials: BackendCredentials | undefined): FetchLike {
  if (!credentials) return inner;
  const send = (input: string | URL, init: RequestInit | undefined, token: string): Promise<Response> => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return inner(input, { ...init, headers });
  };
  const tokenFor = async (signal: AbortSignal | undefined): Promise<string> => {
    try {
      return await credentials.token(signal);
    } catch (e) {
      // The caller's own end (its signal, the gateway closing) stays what it is.
      if (signal?.aborted || e instanceof GatewayError) throw e;
      throw new TokenUnavailable((e as Error).message, { cause: e });
    }
  };
  return async (input, init) => {
    const signal = init?.signal ?? undefined;
    const token = await tokenFor(signal);
    const res = await send(input, init, token);
    if (res.status !== 401 || !replayable(init?.body)) return res;
    credentials.refused(token);
    await res.body?.cancel().catch(() => undefined);
    return send(input, init, await tokenFor(signal));
  };
}
