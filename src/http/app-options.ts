/**
 * What the HTTP surface is given (`AppOptions`): the dialect per path, the legacy session routes, the
 * gate's policy and authenticator, liveness and readiness, and (several instances) forwarding. Also
 * how a request reached this instance (`Arrival`), which every handler of http/ takes.
 */
import type { CancelSource } from '../util/lifeline.js';
import type { Caller, Dialect, SessionRoute, SseRoute } from '../fronts/dialect.js';
import type { Authenticate } from '../auth/authenticator.js';
import type { Logger } from '../log.js';
import type { AnswerLife } from './connection.js';
import type { InFlight } from './in-flight.js';
import type { OriginPolicy } from './guards.js';

export interface AppOptions {
  /** Path → the dialect served there. */
  readonly routes: ReadonlyMap<string, Dialect>;
  /** Path → the session route that shares it (legacy clients on the 2026-07-28 path). */
  readonly sessions?: ReadonlyMap<string, SessionRoute>;
  /** The 2024-11-05 HTTP+SSE transport: its stream path (`/sse`) and message path (`/messages`). */
  readonly sse?: { readonly path: string; readonly messagesPath: string; readonly route: SseRoute };
  readonly policy: OriginPolicy;
  readonly authenticate: Authenticate;
  /** With OAuth: the Protected Resource Metadata document and the paths it is served at (RFC 9728). */
  readonly resourceMetadata?: { readonly paths: readonly string[]; readonly document: Record<string, unknown> } | undefined;
  readonly logger: Logger;
  /** Counts a request refused before it became an exchange (`check`: gate, content, body, rate_limit, envelope; its HTTP status). */
  readonly countRefusal?: ((check: string, status: number) => void) | undefined;
  /** False once the gateway drains or closes (liveness turns 503). */
  readonly isServing: () => boolean;
  /** Backend status for `GET /readyz`: ready while serving with at least one backend up. */
  readonly readiness: () => { ready: boolean; body: Record<string, unknown> } | Promise<{ ready: boolean; body: Record<string, unknown> }>;
  /** Several instances: how a request that another instance must serve gets there, and how such a request is recognised. */
  readonly forward?: Forwarding | undefined;
  /**
   * Rate limits (gateway.rateLimits.requestsPerMinute): charges `cost` requests to `principal`;
   * undefined when admitted, else the refusal (a `rate_limited` error, answered 429; rate-limit.ts).
   */
  readonly chargeRequests?: ((principal: string, cost: number) => Promise<Error | undefined>) | undefined;
  /** Requests whose work has not finished, bounded per principal and in total (in-flight.ts); undefined: no bound. */
  readonly inFlight?: InFlight | undefined;
}

/** What the internal path's checks read of a request (a `Request` is one). */
export interface ForwardHead {
  readonly method: string;
  readonly headers: { get(name: string): string | null };
}

/** Forwarding between instances (the seam is in cluster/; the HTTP layer only carries requests). */
export interface Forwarding {
  /** Where forwarded requests arrive (POST, GET or DELETE; only with a valid signature). */
  readonly internalPath: string;
  /** A header (name, value) every answer to a forwarded request carries, a refusal included (the sender learns from it). */
  readonly answerHeader: readonly [name: string, value: string];
  /** The header that marks a refusal of the internal path itself (its value: why), so its sender serves the request where it arrived. */
  readonly refusedHeader: string;
  /** The header that marks a refusal as a replay's (its sender tells its client the request may have run). */
  readonly replayedHeader: string;
  /**
   * Sends the request (its own method) to `owner`, for the public `target` (path and query); `body` is
   * the POST body as read. Its answer, streamed, or undefined when the owner cannot be reached. The
   * forward is aborted when `answered` ends (the client went away; default: the request's signal).
   * With `caller` (a POST on a dialect path, its caller authenticated here) it may go on a channel
   * to the owner, which serves it as that caller without the HTTP front (gateway/forward-channel.ts).
   */
  send(owner: string, target: string, req: Request, body?: string, answered?: CancelSource, caller?: Caller): Promise<Response | undefined>;
  /**
   * Whether a forwarded request's body may be read: the signature of its head (all but the body, with
   * the body's length) is valid, fresh, for this run of this instance, its nonce not spent; the body's
   * length. Checked before the body is read, so that nobody else makes this instance buffer bodies.
   */
  precheck(req: ForwardHead): { ok: true; value: { readonly bytes: number } } | { ok: false; error: 'forbidden' | 'replayed' | 'misdirected' };
  /**
   * The public path and query a forwarded request is for, when its signature is valid and its nonce not
   * spent (`body` is '' for GET/DELETE); otherwise why it is refused (`misdirected`: signed for no run
   * or another run of this instance, never served here: answered 421 so that its sender sends it again).
   * Never throws: nothing but this process is asked.
   */
  verify(
    req: ForwardHead,
    body: string,
  ): Promise<{ ok: true; value: { readonly path: string; readonly query: URLSearchParams } } | { ok: false; error: 'forbidden' | 'replayed' | 'misdirected' }>;
  /**
   * The other live instance that holds a legacy session (streamable HTTP or 2024 SSE), or undefined to
   * serve it here; for a session being opened (no id), the instance it should open on (this one drains).
   */
  sessionOwner(sessionId: string | undefined): Promise<string | undefined>;
}

/** How a request reached this instance. */
export interface Arrival {
  /** The public path it is for. */
  readonly path: string;
  /** Forwarded by another instance (its signature checked): never forwarded again; Host/Origin were checked there. */
  readonly forwarded: boolean;
  /** The body, when it was read before (a forwarded request's signature covers it). */
  readonly body?: ParsedBody;
  /**
   * The controller of an answer's work, aborted when the client's connection closes first (connection.ts);
   * without it, one linked to the request's signal.
   */
  readonly answerLife?: () => AnswerLife;
}

/** A POST body read and parsed as JSON, with its text (what a forwarded request's signature covers). */
export interface ParsedBody {
  readonly value: unknown;
  readonly text: string;
}
