/**
 * The `fetch` of HTTP backends with the trace: each request carries the W3C `traceparent` of the
 * active span (issue 28: the backend call's span, so a traced backend continues the gateway's trace).
 * Without tracing it is `inner` untouched.
 */
import { injectTraceparent, tracingOn } from '../../util/tracing.js';

type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * Global fetch, each request with a signal of its own that follows the caller's. The SDK's transports
 * pass every request the one signal their transport lives by; undici adds an abort listener to it per
 * request, removed only once that request is garbage collected: past 1,500 calls on one 2024-11-05
 * session the gateway printed a MaxListenersExceededWarning per request and held every listener.
 * `AbortSignal.any` follows the caller's signal with no listener on it.
 */
export const fetchWithOwnSignal: FetchLike = (input, init) => fetch(input, init?.signal ? { ...init, signal: AbortSignal.any([init.signal]) } : init);

/** `inner` (default: fetchWithOwnSignal) sending `traceparent` when tracing is on. */
export function withTraceparent(inner: FetchLike = fetchWithOwnSignal): FetchLike {
  return (input, init) => {
    if (!tracingOn()) return inner(input, init);
    const headers = new Headers(init?.headers);
    injectTraceparent(headers);
    return inner(input, { ...init, headers });
  };
}
