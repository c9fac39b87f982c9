/**
 * The legacy client route: sessions of 2025-era clients (2025-11-25 / 2025-06-18 / 2025-03-26 streamable
 * HTTP, on the same path as the 2026-07-28 endpoint) and of 2024-11-05 clients (HTTP+SSE: `GET /sse`
 * opens the session's event stream, `POST /messages?sessionId=…` carries its messages). A request that
 * opens with a 2025-era `initialize`, or carries an `Mcp-Session-Id`, is served by its session's
 * `WebStandardStreamableHTTPServerTransport` (session ids, POST with JSON or SSE answers, the GET stream,
 * DELETE, version negotiation); a 2024-11-05 session by ./sse-transport.ts. Either way the session is an
 * SDK v2 `Server` whose handlers go through the same dispatcher as `/mcp` (./session-server.ts).
 *
 * Every session enters and leaves through one registry (./session-registry.ts): room is reserved
 * before a session opens (./session-bounds.ts), it is added once open, and it is removed — its state
 * scope dropped, its resource subscriptions ended, its transport closed — whether its client DELETEs
 * it, its `/sse` stream closes, it idles past `idleMs`, it is closed to make room, or the gateway closes.
 *
 * Session ids are `<instanceId>~<uuid>` (./session-ids.ts): several instances behind a balancer forward a
 * request for another instance's session to that instance (./session-routing.ts, http/app.ts), so a
 * session works whichever instance a request lands on. A session belongs to the principal that opened
 * it: another principal's request with its id is told it does not exist. A GET with `Last-Event-ID`
 * resumes a stream from the session's event store (./event-store.ts), or is refused with a clear 4xx.
 */
import {
  WebStandardStreamableHTTPServerTransport,
  classifyInboundRequest,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/server';
import type { EventBus } from '../../core/events.js';
import type { Logger } from '../../log.js';
import { GatewayError, toWireError } from '../../errors.js';
import { untilNone } from '../../util/abort.js';
import { continuesWork } from '../proxy/tools.js';
import { errorAnswer } from './error-answer.js';
import { systemClock, type Clock } from '../../util/clock.js';
import type { Caller, LogTap, SessionRoute } from '../dialect.js';
import { directCall } from './direct-call.js';
import { SessionEventStore, resumptionRefusal } from './event-store.js';
import { refusal } from './session-bounds.js';
import { newSessionId } from './session-ids.js';
import { SessionRegistry } from './session-registry.js';
import { RequestTally, SESSION_ENDED, SessionRequests, type CountRequestOf } from './session-requests.js';
import { announceListChanged, createSessionServer, serverOffer, type SessionServerDeps } from './session-server.js';
import { Session, type SessionWire } from './session.js';
import { HttpSseServerTransport } from './sse-transport.js';
import { rememberingSchemaValidator } from './schema-validator.js';
import { overMessageLimit, type ChargeRequests } from './message-limit.js';
import { boundedSse } from '../../util/sse-queue.js';

export interface LegacySessionsDeps extends SessionServerDeps {
  /** This instance's id, the first part of every session id (`<instanceId>~<uuid>`, ./session-ids.ts). */
  readonly instanceId: string;
  /**
   * True once the gateway drains: a new request in an open session is answered 503 `gateway_draining`
   * with `Retry-After`, as new work is on `/mcp`; answers, notifications, `ping` and the proxy tools
   * that carry work on still pass.
   */
  readonly stopping?: (() => boolean) | undefined;
  /** Backend list changes, announced to every session (as a 2025 server does when its lists change). */
  readonly events?: EventBus | undefined;
  readonly logger: Logger;
  /** Sessions idle this long are closed. */
  readonly idleMs: number;
  /** A call answered beside the SDK server goes out as JSON if it ends within this (ms), else on a stream (./direct-call.ts; default 1 s). */
  readonly jsonAnswerMs?: number | undefined;
  /** Sessions on this instance, in total and per principal (default: `maxSessions`; session-bounds.ts). */
  readonly maxSessions: number;
  readonly maxSessionsPerPrincipal?: number | undefined;
  /**
   * The state scopes (the proxy tools'): each session is one, `session:<id>` inside its principal,
   * which keeps every backend log line of its calls; it is dropped when the session closes.
   */
  readonly scopes?: SessionScopes | undefined;
  /** Time for the idle timeout (default: the system clock). */
  readonly clock?: Clock | undefined;
  /**
   * Counts a request answered without `observe` (`initialize`, `ping`, `logging/setLevel`, …; the
   * session's principal last): absent, only what `observe` serves is counted.
   */
  readonly countOthers?: CountRequestOf | undefined;
  /** Rate limits: charges a 2024-11-05 session's requests (answered on its stream when refused; ./message-limit.ts). */
  readonly chargeRequests?: ChargeRequests | undefined;
}

/** What a session needs of the state scopes. */
export interface SessionScopes {
  logTap(principal: string, scope: string): LogTap;
  drop(principal: string, scope: string): void;
}

export interface LegacySessions extends SessionRoute {
  /** Open sessions. */
  readonly size: number;
  /** Client requests received and not answered yet, over every session (a drain waits for them). */
  readonly inFlight: number;
  /** 2024-11-05 HTTP+SSE: opens a session; the answer is its event stream, whose first event names `messagesUrl`. */
  openSse(messagesUrl: string, caller: Caller): Promise<Response>;
  /** 2024-11-05 HTTP+SSE: one message POSTed for the session `sessionId` (202, or 404 when unknown or not the principal's). */
  postSse(sessionId: string | undefined, body: unknown, caller: Caller): Promise<Response>;
  /** Closes every session (their pending requests fail; their calls are cancelled). */
  close(): Promise<void>;
}

function jsonError(status: number, code: number, message: string): Response {
  return errorAnswer(null, { code, message }, status);
}

const sessionNotFound = (): Response => jsonError(404, -32001, 'Session not found');

function isInitialize(body: unknown): boolean {
  return body !== null && typeof body === 'object' && !Array.isArray(body) && (body as { method?: unknown }).method === 'initialize';
}

/** What the route's steps share. */
interface Front {
  readonly deps: LegacySessionsDeps;
  readonly log: Logger;
  readonly clock: Clock;
  readonly registry: SessionRegistry<Session>;
  /** Client requests in flight over every session. */
  readonly inFlight: RequestTally;
}

export function createLegacySessions(given: LegacySessionsDeps): LegacySessions {
  // One schema validator for every session's server, remembering what it compiled (./schema-validator.ts).
  const deps: LegacySessionsDeps = { ...given, schemaValidator: given.schemaValidator ?? rememberingSchemaValidator() };
  const log = deps.logger.child({ front: 'legacy' });
  const clock = deps.clock ?? systemClock;
  const registry = new SessionRegistry<Session>({
    limits: { total: deps.maxSessions, perPrincipal: deps.maxSessionsPerPrincipal ?? deps.maxSessions },
    idleMs: deps.idleMs,
    scopes: deps.scopes,
    log,
    clock,
  });
  const front: Front = { deps, log, clock, registry, inFlight: new RequestTally() };
  const offListChanged = deps.events?.onListChanged((kind) => {
    for (const s of registry.sessions()) announceListChanged(s.server, kind);
  });
  return {
    get size() {
      return registry.size;
    },
    get inFlight() {
      return front.inFlight.count;
    },
    takes,
    serve: (req, body, caller) => serve(front, req, body, caller),
    openSse: (messagesUrl, caller) => openSse(front, messagesUrl, caller),
    postSse: (sessionId, body, caller) => postSse(front, sessionId, body, caller),
    async close() {
      offListChanged?.();
      await registry.close();
    },
  };
}

/** True for a request with a session id, or a 2025-era `initialize` (SessionRoute.takes). */
function takes(req: Request, body: unknown): boolean {
  if (req.headers.has('mcp-session-id')) return true;
  if (req.method !== 'POST' || !isInitialize(body)) return false;
  // An `initialize` in the 2026-07-28 envelope is a removed method there (-32601 from the stateless
  // front), not a legacy client: the SDK's classifier tells the eras apart.
  const version = req.headers.get('mcp-protocol-version');
  return classifyInboundRequest({ httpMethod: 'POST', body, ...(version !== null ? { protocolVersionHeader: version } : {}) }).kind === 'legacy';
}

/** A streamable HTTP request: one that opens a session, or one of an open session of `principal`'s. */
async function serve(front: Front, req: Request, body: unknown, caller: Caller): Promise<Response> {
  const { principal } = caller;
  const sessionId = req.headers.get('mcp-session-id') ?? undefined;
  if (sessionId === undefined) {
    if (req.method !== 'POST' || !isInitialize(body)) return jsonError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    return withRoom(front, principal, () => initialize(front, req, body, caller));
  }
  const session = front.registry.get(sessionId, principal);
  if (session?.wire.kind !== 'streamable-http') return sessionNotFound();
  session.touch(front.clock.now());
  session.tokenScopes = caller.tokenScopes;
  if (front.deps.stopping?.()) {
    const refused = newWorkWhileDraining(req, body);
    if (refused) return refused;
  }
  return directCall(session, req, body, front.deps, front.deps.jsonAnswerMs) ?? inSession(session, session.wire, req, body);
}

/**
 * A POST of new work in an open session while the gateway drains: 503 `gateway_draining` with
 * `Retry-After` under its request's id (a batch is not looked into). Undefined for what still passes:
 * answers and notifications (a call under way goes on), `ping`, and a proxy tool that carries work on.
 */
function newWorkWhileDraining(req: Request, body: unknown): Response | undefined {
  if (req.method !== 'POST' || body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const message = body as { id?: unknown; method?: unknown; params?: { name?: unknown } };
  if (typeof message.method !== 'string' || message.id === undefined || message.method === 'ping') return undefined;
  if (message.method === 'tools/call' && typeof message.params?.name === 'string' && continuesWork(message.params.name)) return undefined;
  return errorAnswer(message.id as string | number, toWireError(new GatewayError('gateway_draining')));
}

/** Runs `opening` with room reserved for one more session of `principal`; the refusal otherwise. */
async function withRoom(front: Front, principal: string, opening: () => Promise<Response>): Promise<Response> {
  const reservation = await front.registry.reserve(principal);
  if (reservation.kind === 'refused') return refusal(reservation.whose, front.registry.limits);
  try {
    return await opening();
  } finally {
    reservation.done();
  }
}

/** A new session of `principal` over `wire`, its server connected; the registry has not seen it yet. */
async function open(front: Front, id: string, caller: Caller, wire: SessionWire): Promise<Session> {
  const offer = await serverOffer(front.deps);
  const count = front.deps.countOthers;
  const requests = new SessionRequests(
    front.inFlight,
    front.log.child({ principal: caller.principal }),
    count && ((method, outcome, seconds) => count(method, outcome, seconds, caller.principal)),
  );
  const server = (s: Session) => createSessionServer(offer, s, front.deps);
  const session = new Session({ id, principal: caller.principal, wire, requests, now: front.clock.now(), server });
  session.tokenScopes = caller.tokenScopes;
  await session.connect();
  return session;
}

/** A 2025-era `initialize` without a session id: a new streamable HTTP session, kept if the transport took it. */
async function initialize(front: Front, req: Request, body: unknown, caller: Caller): Promise<Response> {
  const id = newSessionId(front.deps.instanceId);
  const events = new SessionEventStore();
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => id, eventStore: events });
  const session = await open(front, id, caller, { kind: 'streamable-http', transport, events });
  const res = await transport.handleRequest(req, { parsedBody: body }).catch(async (e: unknown) => {
    await session.close();
    throw e;
  });
  // The transport answers with the session id once it initialized: otherwise there is nothing to keep.
  if (transport.sessionId === id) front.registry.add(session);
  else await session.close();
  return res;
}

/** A request of an open streamable HTTP session (POST, the GET stream, DELETE). */
async function inSession(session: Session, wire: SessionWire & { kind: 'streamable-http' }, req: Request, body: unknown): Promise<Response> {
  const lastEventId = req.method === 'GET' ? req.headers.get('last-event-id') : null;
  const refused = lastEventId ? resumptionRefusal(wire.events, lastEventId) : undefined;
  if (refused) return refused;
  if (req.method === 'DELETE') await answeredBeforeDelete(session);
  const res = await wire.transport.handleRequest(req, body === undefined ? undefined : { parsedBody: body });
  // Events dropped between the check above and the replay: the transport's 500 becomes the same clear 4xx.
  if (res.status === 500 && lastEventId) {
    const late = resumptionRefusal(wire.events, lastEventId);
    if (late) {
      await res.body?.cancel().catch(() => undefined);
      return late;
    }
  }
  const bounded = boundedReply(res);
  return req.method === 'GET' ? session.countStream(bounded) : bounded;
}

/** An SSE answer of the SDK's transport held to the bound of what a client may leave unread (util/sse-queue.ts). */
function boundedReply(res: Response): Response {
  if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return res;
  return new Response(boundedSse(res.body), { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** How long a DELETE waits for the answers of the session's requests in flight before it closes their streams. */
const ANSWERS_BEFORE_DELETE_MS = 1_000;

/**
 * A session DELETEd with requests in flight: each call is cancelled and answered on its stream (an
 * error: the session ended) before the transport closes the streams. A request the SDK server serves
 * (a prompt waiting on its elicitation, a slow resource read), which cannot be cancelled from here, is
 * given ANSWERS_BEFORE_DELETE_MS to finish, then answered with the same error for it. Before, the
 * streams closed first and the client waited for answers that never came, until its own timeout.
 */
async function answeredBeforeDelete(session: Session): Promise<void> {
  if (session.requests.size === 0) return;
  session.requests.endAll();
  await untilNone(() => session.requests.size, ANSWERS_BEFORE_DELETE_MS, 5);
  const left = session.requests.servedBySdk();
  if (left.length === 0 || session.wire.kind !== 'streamable-http') return;
  const { transport } = session.wire;
  const error = toWireError(new GatewayError('cancelled', SESSION_ENDED));
  await Promise.all(
    left.map(async (id) => {
      const answer = { jsonrpc: '2.0' as const, id, error };
      // The SDK server's own answer, if it comes now, finds its stream gone: the client has this one.
      await transport.send(answer, { relatedRequestId: id }).catch(() => undefined);
      session.requests.sent(answer);
    }),
  );
}

/** 2024-11-05 `GET /sse`: a new session, answered with its event stream (the first event names where to POST). */
function openSse(front: Front, messagesUrl: string, caller: Caller): Promise<Response> {
  return withRoom(front, caller.principal, async () => {
    const sse = new HttpSseServerTransport(messagesUrl, newSessionId(front.deps.instanceId));
    front.registry.add(await open(front, sse.sessionId, caller, { kind: 'sse', transport: sse }));
    return new Response(sse.stream, {
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' },
    });
  });
}

/** 2024-11-05 `POST /messages?sessionId=…`: one message for the session, acknowledged with 202. */
async function postSse(front: Front, sessionId: string | undefined, body: unknown, caller: Caller): Promise<Response> {
  const session = sessionId ? front.registry.get(sessionId, caller.principal) : undefined;
  if (session?.wire.kind !== 'sse' || session.wire.transport.closed) return sessionNotFound();
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return jsonError(400, -32600, 'Invalid Request: one JSON-RPC message per POST');
  // Checked here, where its sender hears of it: the session's stream would drop it unanswered.
  if (!isJSONRPCRequest(body) && !isJSONRPCNotification(body) && !isJSONRPCResponse(body)) {
    return jsonError(400, -32600, 'Invalid Request: the body is not a JSON-RPC 2.0 message');
  }
  session.touch(front.clock.now());
  const refused = await overMessageLimit(front.deps.chargeRequests, caller.principal, body);
  if (refused) {
    await session.wire.transport.send(refused).catch(() => undefined);
    return new Response('Accepted', { status: 202 });
  }
  // Set as the message is delivered (no await between): the handler it starts reads this request's scopes.
  session.tokenScopes = caller.tokenScopes;
  session.wire.transport.deliver(body as JSONRPCMessage);
  return new Response('Accepted', { status: 202 });
}
