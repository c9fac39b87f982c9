/**
 * A POST on a dialect path, in steps: the gate, content negotiation, the body, then either the legacy
 * session route (an `initialize` or a session id), or the dialect: admit the message, hand what another
 * instance owns to it, open a `subscriptions/listen` stream, or run one exchange (JSON or SSE). An
 * admitted request runs inside its span (request-span.ts; a no-op without tracing).
 */
import { limitError, WireCode } from '../errors.js';
import type { Caller, Dialect, RequestContext, SessionRoute } from '../fronts/dialect.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import { linkedController } from '../util/abort.js';
import type { AppOptions, Arrival, ParsedBody } from './app-options.js';
import { linkedAnswerLife, type AnswerLife } from './connection.js';
import { Exchange, jsonResponse } from './exchange.js';
import type { InFlight } from './in-flight.js';
import { logExchange } from './exchange-log.js';
import { gate } from './gate.js';
import { listenResponse } from './listen-stream.js';
import { errorBody, refusal, thrownReply } from './replies.js';
import { notJson, readJson } from './request-body.js';
import { overRequestLimit } from './rate-limit.js';
import { inClientTrace, startRequestSpan, type RequestSpan } from './request-span.js';
import { atSessionOwner, newSessionWhileDraining } from './session-routes.js';
import { refused } from './refusal-log.js';

/** What the client's Accept header lets the answer be. */
export interface Accepts {
  readonly json: boolean;
  readonly sse: boolean;
}

/** Serves a POST on a dialect's path (`arrival.body` when a forwarded request's body was read before). */
export async function servePost(opts: AppOptions, req: Request, dialect: Dialect, sessions: SessionRoute | undefined, arrival: Arrival): Promise<Response> {
  const caller = await gate(opts, req, arrival.forwarded);
  if (caller instanceof Response) return refused(opts, caller, 'gate');
  const { principal } = caller;
  const accepts = negotiate(req);
  if (accepts instanceof Response) return refused(opts, accepts, 'content');
  const parsed = arrival.body ?? (await readJson(req));
  if (parsed instanceof Response) return refused(opts, parsed, 'body');
  // Legacy clients (an `initialize`, or a session id) go to the session route on the same path.
  const inSession = sessions?.takes(req, parsed.value) ?? false;
  // Rate limits: charged where the request arrived first, never again where it was forwarded to; a
  // parked call's retry is not (the call was), and nothing on the session route passes for one.
  const limited =
    arrival.forwarded || !opts.chargeRequests
      ? undefined
      : await overRequestLimit(opts, principal, parsed.value, inSession ? undefined : dialect.continuesParked);
  if (limited) return refused(opts, limited, 'rate_limit');
  if (sessions && inSession) {
    const sessionId = req.headers.get('mcp-session-id');
    return inClientTrace(
      req,
      async () =>
        (await atSessionOwner(opts, req, sessionId, arrival, arrival.path, parsed.text)) ??
        (sessionId ? undefined : newSessionWhileDraining(opts)) ??
        sessions.serve(req, parsed.value, caller),
    );
  }
  return serveAdmission(opts, dialect, req, req, parsed, caller, sessions !== undefined, arrival, accepts);
}

/** What the dialect's part of a POST reads of its request: its headers, and its signal for a listen (a `Request` is one). */
export interface Incoming {
  readonly headers: { get(name: string): string | null };
  readonly signal: AbortSignal;
}

/**
 * The dialect's part of a POST whose caller passed the gate: admit the message, hand what another
 * instance owns to it (`raw`: the request as it came, undefined for one that came forwarded on a
 * channel), open a `subscriptions/listen` stream, or run one exchange.
 */
export async function serveAdmission(
  opts: AppOptions,
  dialect: Dialect,
  req: Incoming,
  raw: Request | undefined,
  parsed: ParsedBody,
  caller: Caller,
  servesSessions: boolean,
  arrival: Arrival,
  accepts: Accepts,
): Promise<Response> {
  const { principal } = caller;
  const admission = admit(dialect, req, parsed.value, servesSessions);
  if (admission.kind === 'reject') {
    const { code, message, data } = admission.error;
    return refused(opts, jsonResponse(errorBody(admission.id, code, message, data), admission.status), 'envelope', { code, error: message.slice(0, 200) });
  }
  if (admission.kind === 'notification') return new Response(null, { status: 202 });
  const { request } = admission;
  const starting = startRequestSpan(dialect, request, principal, req, arrival);
  const span = starting instanceof Promise ? await starting : starting;
  return span.run(async () => {
    let elsewhere: Response | undefined;
    try {
      elsewhere = raw && (await atCallOwner(opts, dialect, request, caller, raw, arrival, parsed.text));
    } catch (e) {
      span.end(); // a forward that failed still ends the request's span
      throw e;
    }
    if (elsewhere) return span.endWith(elsewhere);
    if (dialect.isListen(request)) return serveListen(dialect, request, principal, req.signal, accepts).finally(span.end);
    return serveExchange(opts, dialect, request, caller, arrival.answerLife?.() ?? linkedAnswerLife(req.signal), accepts, span);
  });
}

/** The JSON content type and an Accept the answer can meet; or the 415 / 406 refusal. */
export function negotiate(req: Incoming): Accepts | Response {
  const wrongType = notJson(req);
  if (wrongType) return wrongType;
  const accept = (req.headers.get('accept') ?? '*/*').toLowerCase();
  const json = accept.includes('application/json') || accept.includes('*/*');
  const sse = accept.includes('text/event-stream') || accept.includes('*/*');
  if (!json && !sse) return refusal(WireCode.InvalidRequest, 'Not Acceptable: accept application/json or text/event-stream', 406);
  return { json, sse };
}

/** The dialect's verdict on the body, with the headers it checks against it. */
function admit(dialect: Dialect, req: Incoming, body: unknown, servesSessions: boolean): ReturnType<Dialect['admit']> {
  return dialect.admit({
    httpMethod: 'POST',
    body,
    servesSessions,
    protocolVersionHeader: req.headers.get('mcp-protocol-version') ?? undefined,
    mcpMethodHeader: req.headers.get('mcp-method') ?? undefined,
    mcpNameHeader: req.headers.get('mcp-name') ?? undefined,
    paramHeader: (name) => paramHeaderOf(req.headers, name),
  });
}

/**
 * Several instances: what continues a call or task another instance owns is served there (its answer
 * streamed back). Undefined to serve it here; when where it must be served cannot be told (Redis is
 * away), a retryable error, never a bare 500.
 */
async function atCallOwner(
  opts: AppOptions,
  dialect: Dialect,
  request: FrontRequest,
  caller: Caller,
  req: Request,
  arrival: Arrival,
  text: string,
): Promise<Response | undefined> {
  const forwarding = opts.forward;
  if (!forwarding || arrival.forwarded || !dialect.ownerOf) return undefined;
  let owner: string | undefined;
  try {
    owner = await dialect.ownerOf(request, caller.principal);
  } catch (e) {
    return thrownReply(request.id, e);
  }
  return owner !== undefined ? forwarding.send(owner, arrival.path, req, text, arrival.answerLife?.().life, caller) : undefined;
}

/**
 * `subscriptions/listen`: an SSE stream (listen-stream.ts). The stream ends when the client closes it,
 * not with the request's signal: the listen's signal is aborted only if the request already was.
 */
async function serveListen(dialect: Dialect, request: FrontRequest, principal: string, signal: AbortSignal, accepts: Accepts): Promise<Response> {
  const link = linkedController(signal);
  link.dispose();
  if (!accepts.sse) return jsonResponse(errorBody(request.id, WireCode.InvalidRequest, 'subscriptions/listen needs Accept: text/event-stream'), 406);
  try {
    return listenResponse(await dialect.listen(request, { principal, signal: link.controller.signal }));
  } catch (e) {
    return thrownReply(request.id, e);
  }
}

/**
 * One request/response exchange: the answer as JSON, or as SSE once a related notification comes
 * first; logged when the work settles. `link`'s controller is aborted when the client goes away.
 */
async function serveExchange(
  opts: AppOptions,
  dialect: Dialect,
  request: FrontRequest,
  caller: Caller,
  link: AnswerLife,
  accepts: Accepts,
  span: RequestSpan,
): Promise<Response> {
  const started = performance.now();
  const slot = opts.inFlight?.take(caller.principal);
  if (slot && !slot.ok) {
    link.dispose();
    return refused(opts, thrownReply(request.id, inFlightRefusal(opts.inFlight!, slot.whose)), 'in_flight', { principal: caller.principal });
  }
  const { life } = link;
  const exchange = new Exchange(request.id, accepts.sse, accepts.sse && !accepts.json, life);
  // The front listens to `end`; `signal` is made only if something asks for an AbortSignal (util/lifeline.ts).
  const ctx: RequestContext = {
    principal: caller.principal,
    tokenScopes: caller.tokenScopes,
    get signal() {
      return life.signal;
    },
    end: life,
    sink: exchange.sink,
  };
  const done = slot ? () => (link.dispose(), slot.release()) : link.dispose;
  let work: Promise<Record<string, unknown>>;
  let response: Response;
  try {
    work = dialect.handle(request, ctx);
    span.settle(work, life, opts.logger);
    response = await exchange.respond(work);
  } catch (e) {
    // No answer was made: nothing will log the exchange, so its slot and link go now.
    done();
    throw e;
  }
  logExchange(opts.logger, request, caller.principal, work, { started, signal: life, done });
  return response;
}

/** The refusal of one request more than `inFlight` allows (fair shares: whose bound, and how to free one). */
function inFlightRefusal(inFlight: InFlight, whose: 'principal' | 'total'): Error {
  return limitError({
    whose,
    what: 'requests in flight',
    limit: whose === 'principal' ? 'gateway.maxRequestsInFlightPerPrincipal' : 'gateway.maxRequestsInFlightTotal',
    max: whose === 'principal' ? inFlight.maxPerPrincipal : inFlight.maxTotal,
    free: 'wait for its answers before sending more',
  });
}

/** `Mcp-Param-<name>`, or undefined (also for a name no header can have: a tool schema's `x-mcp-header` is the backend's text). */
function paramHeaderOf(headers: Incoming['headers'], name: string): string | undefined {
  try {
    return headers.get(`mcp-param-${name}`) ?? undefined;
  } catch {
    return undefined;
  }
}
