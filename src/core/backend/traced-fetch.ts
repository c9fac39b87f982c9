/**
 * The `fetch` of HTTP backends with the trace: each request carries the W3C `traceparent` of the
 * active span (issue 28: the backend call's span, so a traced backend continues the gateway's trace).
 * Without tracing it is `inner` untouched.
 */
import { injectTraceparent, tracingOn } from '../../util/tracing.js';

export type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

/** `inner` (default: global fetch) sending `traceparent` when tracing is on. */
export function withTraceparent(inner: FetchLike = (u, i) => fetch(u, i)): FetchLike {
  return (input, init) => {
    if (!tracingOn()) return inner(input, init);
    const headers = new Headers(init?.headers);
    injectTraceparent(headers);
    return inner(input, { ...init, headers });
  };
}
