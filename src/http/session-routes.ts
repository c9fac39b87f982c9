/**
 * Legacy sessions over HTTP: GET (the session's stream) and DELETE (its end) on an MCP path, the
 * 2024-11-05 HTTP+SSE transport (`GET /sse` opens a session and its stream, `POST /messages` delivers
 * one message), and, with several instances, the hop to the instance that holds a session.
 */
import type { SessionRoute, SseRoute } from '../fronts/dialect.js';
import type { AppOptions, Arrival } from './app-options.js';
import { GatewayError } from '../errors.js';
import { gate } from './gate.js';
import { methodNotAllowed, thrownReply } from './replies.js';
import { notJson, parseJson, readJson } from './request-body.js';
import { refused } from './refusal-log.js';
import { inClientTrace } from './request-span.js';

/**
 * Several instances: a request for a legacy session that another live instance holds is served there
 * (its answer, SSE streams included, passed back as it comes). Undefined to serve it here: a session of
 * this instance, a request already forwarded once, or an owner that is gone or cannot be reached (the
 * client is then told `Session not found` and opens a new session). Without a session id (`initialize`,
 * `GET /sse`) the session opens here, or, while this instance drains, on one that takes new work.
 */
export async function atSessionOwner(
  opts: AppOptions,
  req: Request,
  sessionId: string | null | undefined,
  arrival: Arrival,
  target: string,
  body?: string,
): Promise<Response | undefined> {
  const forwarding = opts.forward;
  if (!forwarding || arrival.forwarded) return undefined;
  let owner: string | undefined;
  try {
    owner = await forwarding.sessionOwner(sessionId || undefined);
  } catch (e) {
    // Which instance holds the session cannot be told (Redis is away): "not now", never "no such session".
    return thrownReply(null, e, 503);
  }
  return owner === undefined ? undefined : forwarding.send(owner, target, req, body, arrival.answerLife?.().life);
}

/**
 * A new session (`initialize`, `GET /sse`) that would open on this instance while it drains: 503
 * `gateway_draining` with `Retry-After`, as new work on `/mcp` is (a balancer sends the client to
 * another instance; in a cluster `atSessionOwner` has passed it to one already, if one takes new work).
 */
export function newSessionWhileDraining(opts: AppOptions): Response | undefined {
  return opts.isServing() ? undefined : thrownReply(null, new GatewayError('gateway_draining'), 503);
}

/** 2024-11-05 HTTP+SSE: `GET /sse` opens a session and its stream (on this instance, or on one that takes new work while this one drains). */
export async function openSse(opts: AppOptions, sse: NonNullable<AppOptions['sse']>, req: Request, arrival: Arrival): Promise<Response> {
  const caller = await gate(opts, req, arrival.forwarded);
  if (caller instanceof Response) return refused(opts, caller, 'gate');
  return (await atSessionOwner(opts, req, undefined, arrival, sse.path)) ?? newSessionWhileDraining(opts) ?? sse.route.openSse(sse.messagesPath, caller);
}

/** GET (the session's stream) or DELETE (its end) on an MCP path: only for a legacy session. */
export async function serveSession(opts: AppOptions, req: Request, sessions: SessionRoute | undefined, arrival: Arrival): Promise<Response> {
  if (!sessions || !sessions.takes(req, undefined)) return methodNotAllowed();
  const caller = await gate(opts, req, arrival.forwarded);
  if (caller instanceof Response) return refused(opts, caller, 'gate');
  return (await atSessionOwner(opts, req, req.headers.get('mcp-session-id'), arrival, arrival.path)) ?? sessions.serve(req, undefined, caller);
}

/** 2024-11-05 HTTP+SSE: one message POSTed for the session `sessionId`; `text` is the body when it was read before. */
export async function serveMessage(
  opts: AppOptions,
  route: SseRoute,
  req: Request,
  sessionId: string | undefined,
  arrival: Arrival,
  text?: string,
): Promise<Response> {
  const caller = await gate(opts, req, arrival.forwarded);
  if (caller instanceof Response) return refused(opts, caller, 'gate');
  const wrongType = notJson(req);
  if (wrongType) return refused(opts, wrongType, 'content');
  const body = text !== undefined ? parseJson(text) : await readJson(req);
  if (body instanceof Response) return refused(opts, body, 'body');
  const target = `${arrival.path}?sessionId=${encodeURIComponent(sessionId ?? '')}`;
  return inClientTrace(
    req,
    async () =>
      (sessionId ? await atSessionOwner(opts, req, sessionId, arrival, target, body.text) : undefined) ?? route.postSse(sessionId, body.value, caller),
  );
}
