/**
 * What the HTTP layer needs from a front: a dialect is one way of talking MCP over HTTP, served on its
 * own path (2026-07-28 on `/mcp`, the draft tasks dialect on its own endpoint). Legacy clients reach the
 * same paths through `SessionRoute` (streamable HTTP sessions) and `SseRoute` (2024-11-05 HTTP+SSE). The HTTP
 * layer does the gate checks (Host/Origin, auth, content type, body limit, JSON), hands the body to
 * `admit`, runs `handle` and writes the answer (JSON or SSE); it never reaches into `core/`.
 */
import type { LoggingLevel } from '@modelcontextprotocol/server';
import type { Caller } from '../core/access-policy.js';
import type { CancelSource } from '../util/lifeline.js';
import type { Admission, FrontRequest, InboundHttp, RequestId } from '../protocol/rev-2026-07-28/envelope.js';

/** A notification a front sends on the stream of the request it belongs to. */
export interface OutboundNotification {
  method: string;
  params: Record<string, unknown>;
}
export type NotificationSink = (n: OutboundNotification) => void;

/** Sees every log line a backend sends during a request's calls, whatever the client's level. */
export type LogTap = (backend: string, level: LoggingLevel, params: Record<string, unknown>) => void;

/** Who asks: the principal and, with OAuth, the scopes its token grants (core/access-policy.ts). */
export type { Caller };

/** Who asks and how to reach them while the request runs. */
export interface RequestContext {
  readonly principal: string;
  /** The scopes the caller's token grants (OAuth), for `gateway.policy` rules by scope. */
  readonly tokenScopes?: ReadonlySet<string> | undefined;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
  /**
   * The same end as `signal`, cheaper to listen to (util/lifeline.ts): where the HTTP layer gives one,
   * `signal` is made only when read, so a hot path listens here. Absent: listen to `signal`. A context
   * derived with another `signal` must drop or replace `end`; one derived with the same end should not
   * spread this one (a spread reads `signal`, and makes it): see `withLogTap`.
   */
  readonly end?: CancelSource | undefined;
  /**
   * Aborted when the connection that carries this request's answer closes, where that is not a
   * cancellation (a 2025 client may resume its stream): a pure wait (`await_activity`) answers at once.
   */
  readonly connection?: AbortSignal | undefined;
  /** Where related notifications go; undefined when the client cannot receive them. */
  readonly sink?: NotificationSink | undefined;
  /** The caller's state scope inside its principal: a legacy client session (the proxy tools keep their state per scope). */
  readonly scope?: string | undefined;
  /** Where every backend log line of the request goes (a legacy session's log buffer). */
  readonly logTap?: LogTap | undefined;
}

/** `ctx` with `logTap`, its `signal` and `connection` still made only when read (a spread would read them). */
export function withLogTap(ctx: RequestContext, logTap: LogTap): RequestContext {
  return {
    principal: ctx.principal,
    tokenScopes: ctx.tokenScopes,
    get signal() {
      return ctx.signal;
    },
    end: ctx.end,
    get connection() {
      return ctx.connection;
    },
    sink: ctx.sink,
    scope: ctx.scope,
    logTap,
  };
}

/** A long-lived stream of notifications (`subscriptions/listen`). */
export interface ListenSession {
  readonly id: RequestId;
  /** The first message. */
  readonly ack: Record<string, unknown>;
  /** Delivers matching notifications to `send` until detached; `onEnd` when the gateway closes. */
  attach(send: (message: Record<string, unknown>) => void, onEnd: () => void): () => void;
  /** The result that ends the stream on a graceful shutdown. */
  readonly final: Record<string, unknown>;
}

export interface Dialect {
  /** For logs and errors. */
  readonly name: string;
  /** Admits or rejects one POST body. Never throws. */
  admit(http: InboundHttp): Admission;
  /** Serves one admitted request: a result, or a thrown wire/local error. */
  handle(request: FrontRequest, ctx: RequestContext): Promise<Record<string, unknown>>;
  /** True when `request` opens a notification stream (`listen`) instead of a request/response. */
  isListen(request: FrontRequest): boolean;
  /** Several instances: the other instance that must serve `request` (it continues a call or task held there). */
  ownerOf?(request: FrontRequest, principal: string): Promise<string | undefined>;
  /** The `traceparent` a retry's requestState sealed (the trace of the call it continues), when it is `principal`'s and has one. */
  traceOf?(request: FrontRequest, principal: string): Promise<string | undefined>;
  listen(request: FrontRequest, ctx: RequestContext): Promise<ListenSession>;
  /** True when `requestState` is one this gateway sealed for a call it parked for `principal` (not a backend's own state). */
  continuesParked?(requestState: unknown, principal: string): Promise<boolean>;
}

/**
 * A route of sessions on a dialect's path (the legacy client route): requests that carry a session id
 * or open one are handed over whole, after the HTTP layer's gate checks, and answered by the session's
 * own transport (POST, the GET stream, DELETE).
 */
export interface SessionRoute {
  /** True when the request belongs to the session route (a session id, or a 2025-era opening `initialize`). */
  takes(req: Request, body: unknown): boolean;
  /** Serves it; `body` is the parsed POST body (undefined for GET/DELETE). */
  serve(req: Request, body: unknown, caller: Caller): Promise<Response>;
}

/** The 2024-11-05 HTTP+SSE transport: `GET` opens a session's event stream, `POST` delivers one message to it. */
export interface SseRoute {
  openSse(messagesUrl: string, caller: Caller): Promise<Response>;
  postSse(sessionId: string | undefined, body: unknown, caller: Caller): Promise<Response>;
}
