/**
 * The fetch every HTTP backend is reached with: undici's, on a dispatcher without undici's default
 * 300 s body and headers timeouts. A parked call keeps its backend's response stream open and silent
 * while the client takes its time to answer (up to the requestState's lifetime, 600 s by default), a
 * 2024-11-05 server's GET /sse stream is silent while nothing happens, and a JSON-response server sends
 * its headers only when the call ends: with Node's global fetch each was cut after 5 min, which lost
 * the parked call (or the whole SSE session). How long a call may take is the gateway's own business
 * (`callTimeoutMs`, `parkTimeoutMs`, the caller's AbortSignal), not the socket's.
 */
import { Agent, fetch as undiciFetch } from 'undici';

export type BackendFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A fetch on a dispatcher of its own; `idleTimeoutMs` 0 (the default) means a body or headers may be
 * silent for as long as the request's signal allows.
 */
export function createBackendFetch(idleTimeoutMs = 0): BackendFetch {
  const dispatcher = new Agent({ bodyTimeout: idleTimeoutMs, headersTimeout: idleTimeoutMs });
  return (input, init) => undiciFetch(input, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher }) as unknown as Promise<Response>;
}

let shared: BackendFetch | undefined;

/** The one backend fetch of this process (its sockets are pooled per origin and unref'd when idle). */
export function backendFetch(): BackendFetch {
  shared ??= createBackendFetch();
  return shared;
}
