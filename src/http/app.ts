/**
 * The HTTP surface (the only place that imports Hono). Each configured path serves one dialect
 * (fronts/dialect.ts): POST runs the gate checks (Host/Origin, bearer key, content type, Accept, a
 * body limit enforced while the body streams), then the dialect admits and handles the message and
 * the answer goes out as JSON or SSE. GET/DELETE on a dialect path → 405 (2026-07-28 has no sessions
 * or standalone streams) unless a legacy session claims them. GET /healthz is liveness, GET /readyz
 * readiness with each backend's state. One error boundary turns anything thrown into a JSON-RPC error;
 * unknown paths get a JSON-RPC 404 naming the served paths.
 *
 * Several instances: a request that continues what another live instance holds (an MRTR retry, a
 * task, a legacy session) is forwarded there and its answer streamed back (spec/notes/cluster.md).
 */
import { Hono } from 'hono';
import { GatewayError, WireCode, toWireError } from '../errors.js';
import type { Dialect, SessionRoute, SseRoute } from '../fronts/dialect.js';
import type { Logger } from '../log.js';
import { linkedController } from '../util/abort.js';
import { readBodyLimited } from './body.js';
import { Exchange, jsonResponse } from './exchange.js';
import { checkOrigin, type OriginPolicy } from './guards.js';
import { listenResponse } from './listen-stream.js';
import { headersForStatus, httpStatusFor } from './status.js';

/** Largest POST body accepted, in bytes. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface AppOptions {
  /** Path → the dialect served there. */
  readonly routes: ReadonlyMap<string, Dialect>;
  /** Path → the session route that shares it (legacy clients on the 2026-07-28 path). */
  readonly sessions?: ReadonlyMap<string, SessionRoute>;
  /** The 2024-11-05 HTTP+SSE transport: its stream path (`/sse`) and message path (`/messages`). */
  readonly sse?: { readonly path: string; readonly messagesPath: string; readonly route: SseRoute };
  readonly policy: OriginPolicy;
  readonly authenticate: (authorization: string | undefined) => Promise<string | undefined>;
  readonly logger: Logger;
  /** False once the gateway drains or closes (liveness turns 503). */
  readonly isServing: () => boolean;
  /** Backend status for `GET /readyz`: ready while serving with at least one backend up. */
  readonly readiness: () => { ready: boolean; body: Record<string, unknown> };
  /** Several instances: how a request that another instance must serve gets there, and how such a request is recognised. */
  readonly forward?: Forwarding | undefined;
}

/** Forwarding between instances (the seam is in cluster/; the HTTP layer only carries requests). */
export interface Forwarding {
  /** Where forwarded requests arrive (POST, GET or DELETE; only with a valid signature). */
  readonly internalPath: string;
  /**
   * Sends the request (its own method) to `owner`, for the public `target` (path and query); `body` is
   * the POST body as read. Its answer, streamed, or undefined when the owner cannot be reached.
   */
  send(owner: string, target: string, req: Request, body?: string): Promise<Response | undefined>;
  /**
   * The public path and query a forwarded request is for, when its signature is valid and its nonce not
   * spent (`body` is '' for GET/DELETE); otherwise why it is refused. Throws a GatewayError
   * (`cluster_unavailable`) when that cannot be checked.
   */
  verify(
    req: Request,
    body: string,
  ): Promise<{ ok: true; value: { readonly path: string; readonly query: URLSearchParams } } | { ok: false; error: 'forbidden' | 'replayed' }>;
  /**
   * The other live instance that holds a legacy session (streamable HTTP or 2024 SSE), or undefined to
   * serve it here; for a session being opened (no id), the instance it should open on (this one drains).
   */
  sessionOwner(sessionId: string | undefined): Promise<string | undefined>;
}

/** How a request reached this instance. */
interface Arrival {
  /** The public path it is for. */
  readonly path: string;
  /** Forwarded by another instance (its signature checked): never forwarded again; Host/Origin were checked there. */
  readonly forwarded: boolean;
  /** The body, when it was read before (a forwarded request's signature covers it). */
  readonly body?: { readonly value: unknown; readonly text: string };
}

function errorBody(id: string | number | null, code: number, message: string, data?: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

export function createApp(opts: AppOptions): Hono {
  const app = new Hono();
  const log = opts.logger;
  const paths = [...opts.routes.keys()];
  /** Every path answered here, for a 404 that points the way. */
  const served = [...paths, ...(opts.sse ? [opts.sse.path, opts.sse.messagesPath] : []), '/healthz', '/readyz'];
  const forwarding = opts.forward;

  app.onError((e) => {
    log.error({ err: (e as Error).message }, 'unhandled error in the HTTP layer');
    return jsonResponse(errorBody(null, WireCode.InternalError, 'Internal error'), 500);
  });
  app.notFound((c) =>
    jsonResponse(errorBody(null, WireCode.MethodNotFound, `Not Found: no MCP endpoint at ${c.req.path} (served: ${served.join(', ')})`), 404),
  );

  app.get('/healthz', (c) => (opts.isServing() ? c.json({ status: 'ok' }) : c.json({ status: 'closing' }, 503)));
  app.get('/readyz', async (c) => {
    const refused = checkOrigin(opts.policy, c.req.header('host'), c.req.header('origin'));
    if (refused) return jsonResponse({ error: refused }, 403);
    // Backend errors can name internal addresses: with API keys configured, only key holders see them.
    if ((await opts.authenticate(c.req.header('authorization'))) === undefined)
      return jsonResponse({ error: 'Unauthorized' }, 401, { 'www-authenticate': 'Bearer' });
    const { ready, body } = opts.readiness();
    return c.json(body, ready ? 200 : 503);
  });

  for (const [path, dialect] of opts.routes) {
    const sessions = opts.sessions?.get(path);
    app.on(['GET', 'DELETE'], path, (c) => serveSession(c.req.raw, sessions, { path, forwarded: false }));
    app.on(['PUT', 'PATCH'], path, methodNotAllowed);
    app.post(path, (c) => servePost(c.req.raw, dialect, sessions, { path, forwarded: false }));
  }

  if (forwarding) {
    // Another instance's request: its signature covers the method, the public path and query, and the body.
    app.on(['POST', 'GET', 'DELETE'], forwarding.internalPath, async (c) => {
      const req = c.req.raw;
      const text = req.method === 'POST' ? await readText(req) : '';
      if (text instanceof Response) return text;
      const forbidden = () => jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Forbidden: not a request forwarded by an instance of this cluster'), 403);
      let verdict: Awaited<ReturnType<Forwarding['verify']>>;
      try {
        verdict = await forwarding.verify(req, text);
      } catch (e) {
        const error = toWireError(e);
        const status = httpStatusFor(error);
        log.warn({ reason: (error.data as { reason?: unknown } | undefined)?.reason }, 'a forwarded request was refused: its nonce could not be checked');
        return jsonResponse(errorBody(null, error.code, error.message, error.data), status, headersForStatus(status));
      }
      if (!verdict.ok) {
        if (verdict.error === 'replayed') {
          log.warn({}, 'a forwarded request was refused: it was already served (a replay)');
          return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Forbidden: this forwarded request was already served once (a replay)'), 403);
        }
        return forbidden();
      }
      const target = verdict.value;
      const arrival = { path: target.path, forwarded: true };
      if (opts.sse && req.method === 'POST' && target.path === opts.sse.messagesPath) {
        return serveMessage(req, target.query.get('sessionId') ?? undefined, opts.sse.route, arrival, text);
      }
      if (opts.sse && req.method === 'GET' && target.path === opts.sse.path) return openSse(req, arrival);
      const dialect = opts.routes.get(target.path);
      if (!dialect) return forbidden();
      const sessions = opts.sessions?.get(target.path);
      if (req.method !== 'POST') return serveSession(req, sessions, arrival);
      const body = parseJson(text);
      return body instanceof Response ? body : servePost(req, dialect, sessions, { ...arrival, body });
    });
  }

  if (opts.sse) {
    const { path, messagesPath, route } = opts.sse;
    // The stream stays where it opened: that instance holds the session it opens (another one, while this one drains).
    app.get(path, (c) => openSse(c.req.raw, { path, forwarded: false }));
    app.post(messagesPath, (c) => serveMessage(c.req.raw, c.req.query('sessionId'), route, { path: messagesPath, forwarded: false }));
  }

  function methodNotAllowed(): Response {
    return jsonResponse(errorBody(null, WireCode.MethodNotFound, 'Method Not Allowed: this endpoint accepts POST only'), 405, { allow: 'POST' });
  }

  /** The gate every MCP request passes: Host/Origin (checked where a forwarded request first arrived), then the bearer key. The caller's principal, or the refusal. */
  async function gate(req: Request, forwarded = false): Promise<string | Response> {
    const refused = forwarded ? undefined : checkOrigin(opts.policy, req.headers.get('host') ?? undefined, req.headers.get('origin') ?? undefined);
    if (refused) return jsonResponse(errorBody(null, WireCode.InvalidRequest, refused), 403);
    const principal = await opts.authenticate(req.headers.get('authorization') ?? undefined);
    if (principal !== undefined) return principal;
    return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Unauthorized: a valid Bearer API key is required'), 401, { 'www-authenticate': 'Bearer' });
  }

  /** The body as text, its size limit enforced while it streams; or the error answer. */
  async function readText(req: Request): Promise<string | Response> {
    const read = await readBodyLimited(req, MAX_BODY_BYTES);
    if (read.ok) return read.text;
    return read.reason === 'too_large'
      ? jsonResponse(errorBody(null, WireCode.InvalidRequest, `Payload Too Large: the body must be at most ${MAX_BODY_BYTES} bytes`), 413)
      : jsonResponse(errorBody(null, WireCode.ParseError, 'Parse error: the body could not be read as UTF-8'), 400);
  }

  function parseJson(text: string): { value: unknown; text: string } | Response {
    try {
      return { value: JSON.parse(text) as unknown, text };
    } catch {
      return jsonResponse(errorBody(null, WireCode.ParseError, 'Parse error: the body is not valid JSON'), 400);
    }
  }

  /** The body as JSON, its size limit enforced while it streams; or the error answer. */
  async function readJson(req: Request): Promise<{ value: unknown; text: string } | Response> {
    const text = await readText(req);
    return text instanceof Response ? text : parseJson(text);
  }

  /**
   * Several instances: a request for a legacy session that another live instance holds is served there
   * (its answer, SSE streams included, passed back as it comes). Undefined to serve it here: a session of
   * this instance, a request already forwarded once, or an owner that is gone or cannot be reached (the
   * client is then told `Session not found` and opens a new session). Without a session id (`initialize`,
   * `GET /sse`) the session opens here, or, while this instance drains, on one that takes new work.
   */
  async function atSessionOwner(
    req: Request,
    sessionId: string | null | undefined,
    arrival: Arrival,
    target: string,
    body?: string,
  ): Promise<Response | undefined> {
    if (!forwarding || arrival.forwarded) return undefined;
    let owner: string | undefined;
    try {
      owner = await forwarding.sessionOwner(sessionId || undefined);
    } catch (e) {
      // Which instance holds the session cannot be told (Redis is away): "not now", never "no such session".
      const error = toWireError(e);
      return jsonResponse(errorBody(null, error.code, error.message, error.data), 503, headersForStatus(503));
    }
    return owner === undefined ? undefined : forwarding.send(owner, target, req, body);
  }

  /** 2024-11-05 HTTP+SSE: `GET /sse` opens a session and its stream. */
  async function openSse(req: Request, arrival: Arrival): Promise<Response> {
    const sse = opts.sse!;
    const caller = await gate(req, arrival.forwarded);
    if (typeof caller !== 'string') return caller;
    return (await atSessionOwner(req, undefined, arrival, sse.path)) ?? sse.route.openSse(sse.messagesPath, caller);
  }

  /** GET (the session's stream) or DELETE (its end) on an MCP path: only for a legacy session. */
  async function serveSession(req: Request, sessions: SessionRoute | undefined, arrival: Arrival): Promise<Response> {
    if (!sessions || !sessions.claims(req, undefined)) return methodNotAllowed();
    const caller = await gate(req, arrival.forwarded);
    if (typeof caller !== 'string') return caller;
    return (await atSessionOwner(req, req.headers.get('mcp-session-id'), arrival, arrival.path)) ?? sessions.serve(req, undefined, caller);
  }

  /** 2024-11-05 HTTP+SSE: one message POSTed for the session `sessionId`; `text` is the body when it was read before. */
  async function serveMessage(req: Request, sessionId: string | undefined, route: SseRoute, arrival: Arrival, text?: string): Promise<Response> {
    const caller = await gate(req, arrival.forwarded);
    if (typeof caller !== 'string') return caller;
    const body = text !== undefined ? parseJson(text) : await readJson(req);
    if (body instanceof Response) return body;
    const target = `${arrival.path}?sessionId=${encodeURIComponent(sessionId ?? '')}`;
    return (sessionId ? await atSessionOwner(req, sessionId, arrival, target, body.text) : undefined) ?? route.postSse(sessionId, body.value, caller);
  }

  async function servePost(req: Request, dialect: Dialect, sessions: SessionRoute | undefined, arrival: Arrival): Promise<Response> {
    const principal = await gate(req, arrival.forwarded);
    if (typeof principal !== 'string') return principal;
    if (!(req.headers.get('content-type') ?? '').toLowerCase().includes('application/json')) {
      return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json'), 415);
    }
    const accept = (req.headers.get('accept') ?? '*/*').toLowerCase();
    const acceptsJson = accept.includes('application/json') || accept.includes('*/*');
    const acceptsSse = accept.includes('text/event-stream') || accept.includes('*/*');
    if (!acceptsJson && !acceptsSse) {
      return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Not Acceptable: accept application/json or text/event-stream'), 406);
    }
    const parsed = arrival.body ?? (await readJson(req));
    if (parsed instanceof Response) return parsed;
    const body = parsed.value;
    // Legacy clients (an `initialize`, or a session id) go to the session route on the same path.
    if (sessions?.claims(req, body)) {
      return (await atSessionOwner(req, req.headers.get('mcp-session-id'), arrival, arrival.path, parsed.text)) ?? sessions.serve(req, body, principal);
    }
    const admission = dialect.admit({
      httpMethod: 'POST',
      body,
      protocolVersionHeader: req.headers.get('mcp-protocol-version') ?? undefined,
      mcpMethodHeader: req.headers.get('mcp-method') ?? undefined,
      mcpNameHeader: req.headers.get('mcp-name') ?? undefined,
      paramHeaders: paramHeadersOf(req.headers),
    });
    if (admission.kind === 'reject') {
      return jsonResponse(errorBody(admission.id, admission.error.code, admission.error.message, admission.error.data), admission.status);
    }
    if (admission.kind === 'notification') return new Response(null, { status: 202 });

    const { request } = admission;
    // Several instances: what continues a call or task held by another instance is served there.
    if (forwarding && !arrival.forwarded && dialect.holder) {
      let owner: string | undefined;
      try {
        owner = await dialect.holder(request, principal);
      } catch (e) {
        // Where it must be served cannot be told (Redis is away): a retryable error, never a bare 500.
        const error = toWireError(e);
        const status = httpStatusFor(error);
        return jsonResponse(errorBody(request.id, error.code, error.message, error.data), status, headersForStatus(status));
      }
      const answer = owner !== undefined ? await forwarding.send(owner, arrival.path, req, parsed.text) : undefined;
      if (answer) return answer;
    }
    const started = performance.now();
    const link = linkedController(req.signal);
    const ctxBase = { principal, signal: link.controller.signal };
    if (dialect.isListen(request)) {
      link.dispose();
      if (!acceptsSse) return jsonResponse(errorBody(request.id, WireCode.InvalidRequest, 'subscriptions/listen needs Accept: text/event-stream'), 406);
      try {
        return listenResponse(await dialect.listen(request, ctxBase));
      } catch (e) {
        const error = toWireError(e);
        const status = httpStatusFor(error);
        return jsonResponse(errorBody(request.id, error.code, error.message, error.data), status, headersForStatus(status));
      }
    }
    const exchange = new Exchange(request.id, acceptsSse, acceptsSse && !acceptsJson, link.controller);
    const work = dialect.handle(request, { ...ctxBase, sink: exchange.sink });
    const response = await exchange.respond(work);
    void work
      .then(
        (r) =>
          log.info({ method: request.method, name: nameOf(request.params), resultType: r['resultType'], ms: Math.round(performance.now() - started) }, 'mcp'),
        (e: unknown) => {
          const ms = Math.round(performance.now() - started);
          const line = { method: request.method, name: nameOf(request.params), ms };
          // The client went away: nobody got an error, so none is logged as one.
          if (link.controller.signal.aborted) return log.info({ ...line, reason: 'client_gone' }, 'mcp');
          const wire = toWireError(e);
          const reason = (wire.data as { reason?: unknown } | undefined)?.reason;
          const expected = e instanceof GatewayError || typeof (e as { code?: unknown }).code === 'number';
          if (expected) log.info({ ...line, code: wire.code, ...(reason !== undefined ? { reason } : {}) }, 'mcp');
          else log.warn({ ...line, code: wire.code, err: (e as Error).message }, 'mcp');
        },
      )
      .finally(() => link.dispose());
    return response;
  }

  return app;
}

function paramHeadersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name.startsWith('mcp-param-')) out[name.slice('mcp-param-'.length)] = value;
  });
  return out;
}

function nameOf(params: Record<string, unknown>): string | undefined {
  const v = params['name'] ?? params['uri'];
  return typeof v === 'string' ? v.slice(0, 200) : undefined;
}
