/**
 * The SDK v2 `Server` of one legacy session (streamable HTTP or 2024-11-05 SSE alike). Its handlers do
 * not translate anything themselves: each builds the 2026-07-28 request the session's client would
 * have sent (its declared capabilities, its `logging/setLevel` level and its progress token as the
 * per-request `_meta`) and hands it to the same dispatcher as `/mcp`. When that answers
 * `input_required`, ./fulfil.ts sends the input requests to this client as real `elicitation/create`,
 * `sampling/createMessage` and `roots/list` requests on the call's stream and retries with the answers
 * and the requestState (the SDK's own legacy shim is off: it cannot see the parked call, see
 * spec/notes/legacy-route.md). So every pair {legacy, 2026-07-28} client × backend goes through one
 * translation.
 *
 * It declares what the backends offer (the SDK refuses a handler for an undeclared capability), plus
 * `logging`, and `resources.subscribe` when some backend supports it: subscriptions are relayed
 * (./resource-subscriptions.ts) and kept on the session, which ends them when it ends.
 */
import { randomUUID } from 'node:crypto';
import {
  Server,
  type CreateMessageRequest,
  type ElicitRequestFormParams,
  type ElicitRequestURLParams,
  type HandlerResultTypeMap,
  type ListRootsRequest,
  type RequestTypeMap,
  type ServerContext,
  type jsonSchemaValidator,
} from '@modelcontextprotocol/server';
import { inputCapabilitiesOf } from '../../core/input-capabilities.js';
import type { ListChange } from '../../core/events.js';
import { ProtocolError, WireCode, invalidParams, toWireError } from '../../errors.js';
import { META, type FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import { withoutTasksExtension } from '../../protocol/rev-2026-07-28/tasks.js';
import { resourceUriError } from '../../protocol/resource-uri.js';
import type { Logger } from '../../log.js';
import { background } from '../../util/background.js';
import type { CancelSource } from '../../util/lifeline.js';
import { traceFields, tracingOn } from '../../util/tracing.js';
import type { Caller, LogTap, OutboundNotification, RequestContext } from '../dialect.js';
import type { RequestHandler } from '../mrtr/dispatch.js';
import { fulfil } from './fulfil.js';
import type { ResourceSubscriptions } from './resource-subscriptions.js';
import type { Session } from './session.js';

/** The methods a legacy session serves through the dispatcher, each with the server capability it belongs to. */
const FORWARDED = {
  'tools/list': 'tools',
  'tools/call': 'tools',
  'prompts/list': 'prompts',
  'prompts/get': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resources',
  'resources/read': 'resources',
  'completion/complete': 'completions',
} as const;
export type Forwarded = keyof typeof FORWARDED;

export interface SessionServerDeps {
  /** The dispatcher of `/mcp`. */
  readonly handle: RequestHandler;
  /**
   * Wraps the serving of one client request, all its input rounds included (its metrics and its
   * span: one client request is one request, however many rounds it took inside).
   */
  readonly observe?: ((req: FrontRequest, ctx: RequestContext, work: () => Promise<Record<string, unknown>>) => Promise<Record<string, unknown>>) | undefined;
  /** The gateway's capabilities as `server/discover` describes them. */
  readonly capabilities: () => Promise<Record<string, Record<string, unknown>>>;
  /** Resource subscriptions relayed to backends (`resources/subscribe` is offered when set and a backend supports it). */
  readonly subscriptions?: ResourceSubscriptions | undefined;
  /** True when some backend supports `resources/subscribe`. */
  readonly subscribable?: () => Promise<boolean>;
  readonly serverInfo: { name: string; version: string };
  readonly instructions?: string | undefined;
  /** How long the client has to answer an input request sent on a backend's behalf (the park lifetime). */
  readonly inputTimeoutMs: number;
  /** Whether the caller may read (and so subscribe to) `uri` under `gateway.policy`; none: everyone may. */
  readonly mayRead?: ((caller: Caller, uri: string) => Promise<boolean>) | undefined;
  /** Where every backend log line of a session's calls is kept (the session's state scope). */
  readonly scopes?: { logTap(principal: string, scope: string): LogTap } | undefined;
  /**
   * What checks a client's accepted elicitation content against `requestedSchema`: one for every
   * session (./schema-validator.ts). Default: the SDK's own, one per session.
   */
  readonly schemaValidator?: jsonSchemaValidator | undefined;
  /** Where a failed relay to a client (a notification its transport could not send) is logged. */
  readonly logger?: Logger | undefined;
}

/** What a session's handlers read and update. */
export type SessionState = Pick<Session, 'principal' | 'scope' | 'logLevel' | 'subscriptions' | 'tokenScopes' | 'requests'>;

/** What a new session's server offers: the backends' capabilities as they are now. */
export interface ServerOffer {
  readonly capabilities: Record<string, Record<string, unknown>>;
  /** Set when `resources/subscribe` is offered. */
  readonly relay: ResourceSubscriptions | undefined;
}

/** What a session opened now offers (asks the backends' capabilities, and whether one supports subscribe). */
export async function serverOffer(deps: SessionServerDeps): Promise<ServerOffer> {
  const { extensions: _ext, ...capabilities } = await deps.capabilities(); // the tasks extension is 2026-07-28 only
  const relay = deps.subscriptions && capabilities['resources'] && (await deps.subscribable?.()) ? deps.subscriptions : undefined;
  if (relay) capabilities['resources'] = { ...capabilities['resources'], subscribe: true };
  return { capabilities, relay };
}

/** A v2 `Server` whose handlers hand each request, as the 2026-07-28 request it stands for, to the dispatcher. */
export function createSessionServer(offer: ServerOffer, session: SessionState, deps: SessionServerDeps): Server {
  const server = new Server(deps.serverInfo, {
    capabilities: { ...offer.capabilities, logging: {} },
    // Input rounds are fulfilled by ./fulfil.ts, which knows the parked call behind them; an
    // `input_required` that still reached the SDK would be a bug, and fails loudly.
    inputRequired: { legacyShim: false },
    ...(deps.schemaValidator ? { jsonSchemaValidator: deps.schemaValidator } : {}),
    ...(deps.instructions ? { instructions: deps.instructions } : {}),
  });
  skipRequestIdZero(server);
  for (const method of Object.keys(FORWARDED) as Forwarded[]) {
    // The SDK server refuses a handler for a capability it does not declare: only what the backends offer.
    if (offer.capabilities[FORWARDED[method]]) server.setRequestHandler(method, forwarder(method, server, session, deps));
  }
  if (offer.relay) relaySubscriptions(server, offer.relay, session, deps.mayRead);
  server.setRequestHandler('logging/setLevel', async (request) => {
    session.logLevel = request.params.level;
    return {};
  });
  return server;
}

/** Announces a backend's list change to the session's client, as a 2025 server announces its own. */
export function announceListChanged(server: Server, kind: ListChange): void {
  const send = kind === 'tools' ? server.sendToolListChanged() : kind === 'prompts' ? server.sendPromptListChanged() : server.sendResourceListChanged();
  void send.catch(() => undefined);
}

/** The handler of a forwarded method: the request, run through the dispatcher and ./fulfil.ts. */
function forwarder<M extends Forwarded>(
  method: M,
  server: Server,
  session: SessionState,
  deps: SessionServerDeps,
): (request: RequestTypeMap[M], ctx: ServerContext) => Promise<HandlerResultTypeMap[M]> {
  return async (request, ctx) => {
    const leg = { relatedRequestId: ctx.mcpReq.id, timeout: deps.inputTimeoutMs, resetTimeoutOnProgress: true, maxTotalTimeout: deps.inputTimeoutMs };
    const exchange: ForwardedExchange = {
      id: ctx.mcpReq.id,
      signal: ctx.mcpReq.signal,
      // A dropped POST stream is not a cancellation here (the client may resume it), but a pure wait ends.
      connection: ctx.http?.req?.signal,
      notify: (n: OutboundNotification) => background('relay a notification to a legacy client', ctx.mcpReq.notify(n), deps.logger),
      send: (inputMethod, inputParams, signal) => sendInput(server, inputMethod, inputParams, { ...leg, signal }),
    };
    return forwardedResult<M>(await serveForwarded(method, request.params ?? {}, exchange, server, session, deps));
  };
}

/**
 * How one forwarded request reaches its client, whichever way it came in: through the session's SDK
 * server (its handler's context), or answered as JSON beside it (./direct-call.ts).
 */
export interface ForwardedExchange {
  readonly id: string | number;
  /** Aborted when the client cancels the request, or its session ends. */
  readonly signal: AbortSignal;
  /** The same end as `signal`, cheaper to listen to (RequestContext.end); absent: listen to `signal`. */
  readonly end?: CancelSource | undefined;
  /** Aborted when the connection that carries the answer closes (RequestContext.connection). */
  readonly connection?: AbortSignal | undefined;
  /** Where the request's related notifications go; absent when nothing can be streamed to the client. */
  readonly notify?: ((n: OutboundNotification) => void) | undefined;
  /** Sends one input request to the client on the request's behalf (./fulfil.ts). */
  send(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>;
}

/**
 * One forwarded request, as the 2026-07-28 request the session's client would have sent, through the
 * dispatcher and ./fulfil.ts; its answer as a 2025 client reads it, or its failure as a ProtocolError
 * in the wire form.
 */
export async function serveForwarded(
  method: Forwarded,
  requestParams: Record<string, unknown>,
  exchange: ForwardedExchange,
  server: Server,
  session: SessionState,
  deps: SessionServerDeps,
): Promise<Record<string, unknown>> {
  // The 2026-07-28 round fields are not a 2025 client's to send: the loop below fills them.
  const { inputResponses: _ir, requestState: _rs, ...params } = requestParams;
  // This route serves no tasks (a 2025 client cannot read a task answer): a tasks extension the
  // client declared anyway does not count, so it is never handed a task nor listed a tool that needs one.
  const capabilities = withoutTasksExtension((server.getClientCapabilities() ?? {}) as Record<string, unknown>);
  const progressToken = (params['_meta'] as { progressToken?: unknown } | undefined)?.progressToken;
  const front: FrontRequest = {
    id: exchange.id,
    method,
    params,
    capabilities,
    clientInfo: server.getClientVersion(),
    logLevel: session.logLevel,
    progressToken: typeof progressToken === 'string' || typeof progressToken === 'number' ? progressToken : undefined,
    paramHeader: () => undefined,
  };
  // `signal` and `connection` are read only when something asks for them (./direct-call.ts makes them then).
  const requestCtx: RequestContext = {
    principal: session.principal,
    tokenScopes: session.tokenScopes,
    get signal() {
      return exchange.signal;
    },
    end: exchange.end,
    get connection() {
      return exchange.connection;
    },
    sink: exchange.notify,
    scope: session.scope,
    logTap: deps.scopes?.logTap(session.principal, session.scope),
  };
  const serve = (): Promise<Record<string, unknown>> => {
    // Inside the request's server span (deps.observe): the session's line for the request carries its ids.
    session.requests.observed(exchange.id, tracingOn() ? traceFields() : undefined);
    return fulfil(params, {
      method,
      caps: inputCapabilitiesOf(capabilities),
      get signal() {
        return exchange.signal;
      },
      round: (roundParams, parked) => deps.handle({ ...front, params: roundParams }, requestCtx, { parked }),
      send: (inputMethod, inputParams, signal) => exchange.send(inputMethod, inputParams, signal),
    });
  };
  const result = await (deps.observe ? deps.observe(front, requestCtx, serve) : serve()).catch((e: unknown) => {
    // As on /mcp: the wire form (a backend's v1 "MCP error <code>: " prefixes gone, a local
    // failure as -32603 with its reason); the client's SDK adds its own one prefix.
    const wire = toWireError(e);
    throw new ProtocolError(wire.code, wire.message, wire.data);
  });
  return legacyResult(result);
}

/**
 * A backend's answer as the method's result. A gateway passes what it forwards on as it came (no
 * over-validation: unknown fields travel); the SDK checks a `tools/call` result itself, and the
 * client checks the rest.
 */
function forwardedResult<M extends Forwarded>(result: Record<string, unknown>): HandlerResultTypeMap[M] {
  return result as HandlerResultTypeMap[M];
}

/** A 2026-07-28 result as a 2025 client expects it: no `resultType`, no gateway `_meta` of the new era. */
function legacyResult(result: Record<string, unknown>): Record<string, unknown> {
  const { resultType: _rt, ttlMs: _ttl, cacheScope: _scope, _meta, ...rest } = result;
  const meta = { ...((_meta as Record<string, unknown> | undefined) ?? {}) };
  delete meta[META.serverInfo];
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

/** `resources/subscribe` and `resources/unsubscribe`, relayed; the session keeps each subscription until it ends. */
function relaySubscriptions(server: Server, relay: ResourceSubscriptions, session: SessionState, mayRead: SessionServerDeps['mayRead']): void {
  server.setRequestHandler('resources/subscribe', async (request) => {
    const { uri } = request.params;
    const bad = resourceUriError(uri);
    if (bad) throw bad;
    if (mayRead && !(await mayRead({ principal: session.principal, tokenScopes: session.tokenScopes }, uri))) {
      throw invalidParams(`Forbidden: resource "${uri}" is not allowed to this caller by the gateway's policy (gateway.policy)`, { reason: 'forbidden' });
    }
    if (!session.subscriptions.has(uri)) {
      const end = await relay.subscribe(uri, (changed) => void server.sendResourceUpdated({ uri: changed }).catch(() => undefined));
      await session.subscriptions.add(uri, end);
    }
    return {};
  });
  server.setRequestHandler('resources/unsubscribe', async (request) => {
    const bad = resourceUriError(request.params.uri);
    if (bad) throw bad;
    await session.subscriptions.remove(request.params.uri);
    return {};
  });
}

/**
 * The SDK clients (v1 and v2) drop a `notifications/cancelled` for request id 0 (a truthiness check;
 * modelcontextprotocol/typescript-sdk#2283), and the SDK server numbers its requests from 0: the first
 * input request of a session could never be withdrawn at the client. Its requests start at 1 instead.
 * The SDK field is private; the legacy-route test of a withdrawn elicitation fails if it moves.
 */
function skipRequestIdZero(server: Server): void {
  const ids = server as unknown as { _requestMessageId?: unknown };
  if (ids._requestMessageId === 0) ids._requestMessageId = 1;
}

export interface LegOptions {
  relatedRequestId: string | number;
  timeout: number;
  resetTimeoutOnProgress: boolean;
  maxTotalTimeout: number;
  signal: AbortSignal;
}

/**
 * One input request to the session's client, through the SDK server's own senders (they check the
 * client's capabilities). Its params are the backend's, passed on as they came.
 */
export async function sendInput(server: Server, method: string, params: Record<string, unknown>, options: LegOptions): Promise<Record<string, unknown>> {
  switch (method) {
    case 'elicitation/create': {
      // The 2025-11-25 URL mode needs an elicitationId; 2026-07-28 has none.
      const p = params['mode'] === 'url' && params['elicitationId'] === undefined ? { ...params, elicitationId: randomUUID() } : params;
      return await server.elicitInput(p as ElicitRequestFormParams | ElicitRequestURLParams, options);
    }
    case 'sampling/createMessage':
      return await server.createMessage(params as CreateMessageRequest['params'], options);
    case 'roots/list':
      return await server.listRoots(params as ListRootsRequest['params'], options);
    default:
      throw new ProtocolError(WireCode.InternalError, `${method} is not a request the gateway sends to clients`);
  }
}
