/**
 * The HTTP surface (the only place that imports Hono): POST `<path>` speaks MCP 2026-07-28,
 * GET/DELETE `<path>` → 405 (no sessions or standalone streams in 2026-07-28), GET /healthz.
 */
import { Hono } from 'hono';
import { WireCode } from '../errors.js';
import type { Logger } from '../log.js';
import { linkedController } from '../util/abort.js';
import { admit } from '../protocol/rev-2026-07-28/envelope.js';
import type { FrontHandler } from '../protocol/rev-2026-07-28/front.js';
import { Exchange, jsonResponse } from './exchange.js';
import { checkOrigin, type OriginPolicy } from './guards.js';
import { listenResponse } from './listen-stream.js';
import type { ListenSession } from '../protocol/rev-2026-07-28/listen.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import { toWireError } from '../errors.js';
import { httpStatusFor } from './status.js';

const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface AppOptions {
  readonly path: string;
  readonly front: FrontHandler;
  /** Opens a `subscriptions/listen` stream. */
  readonly listen: (req: FrontRequest) => Promise<ListenSession>;
  readonly policy: OriginPolicy;
  readonly authenticate: (authorization: string | undefined) => Promise<string | undefined>;
  readonly logger: Logger;
  readonly isServing: () => boolean;
}

function errorBody(id: string | number | null, code: number, message: string, data?: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

export function createApp(opts: AppOptions): Hono {
  const app = new Hono();
  const log = opts.logger;

  app.get('/healthz', (c) => (opts.isServing() ? c.json({ status: 'ok' }) : c.json({ status: 'closing' }, 503)));

  app.on(['GET', 'DELETE', 'PUT', 'PATCH'], opts.path, () =>
    jsonResponse(errorBody(null, WireCode.MethodNotFound, 'Method Not Allowed: this endpoint accepts POST only'), 405, { allow: 'POST' }),
  );

  app.post(opts.path, async (c) => {
    const req = c.req.raw;
    const refused = checkOrigin(opts.policy, req.headers.get('host') ?? undefined, req.headers.get('origin') ?? undefined);
    if (refused) return jsonResponse(errorBody(null, WireCode.InvalidRequest, refused), 403);
    const principal = await opts.authenticate(req.headers.get('authorization') ?? undefined);
    if (principal === undefined) {
      return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Unauthorized: a valid Bearer API key is required'), 401, {
        'www-authenticate': 'Bearer',
      });
    }
    if (!(req.headers.get('content-type') ?? '').toLowerCase().includes('application/json')) {
      return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json'), 415);
    }
    const accept = (req.headers.get('accept') ?? '*/*').toLowerCase();
    const acceptsJson = accept.includes('application/json') || accept.includes('*/*');
    const acceptsSse = accept.includes('text/event-stream') || accept.includes('*/*');
    if (!acceptsJson && !acceptsSse) {
      return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Not Acceptable: accept application/json or text/event-stream'), 406);
    }
    if (Number(req.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) {
      return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Payload Too Large'), 413);
    }
    const text = await req.text();
    if (text.length > MAX_BODY_BYTES) return jsonResponse(errorBody(null, WireCode.InvalidRequest, 'Payload Too Large'), 413);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return jsonResponse(errorBody(null, WireCode.ParseError, 'Parse error: the body is not valid JSON'), 400);
    }
    const admission = admit({
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
    if (request.method === 'subscriptions/listen') {
      if (!acceptsSse) return jsonResponse(errorBody(request.id, WireCode.InvalidRequest, 'subscriptions/listen needs Accept: text/event-stream'), 406);
      try {
        return listenResponse(await opts.listen(request));
      } catch (e) {
        const error = toWireError(e);
        return jsonResponse(errorBody(request.id, error.code, error.message, error.data), httpStatusFor(error.code));
      }
    }
    const started = performance.now();
    const link = linkedController(req.signal);
    const exchange = new Exchange(request.id, acceptsSse, acceptsSse && !acceptsJson, link.controller);
    const work = opts.front(request, { principal, signal: link.controller.signal, sink: exchange.sink });
    const response = await exchange.respond(work);
    void work
      .then(
        (r) =>
          log.info({ method: request.method, name: nameOf(request.params), resultType: r['resultType'], ms: Math.round(performance.now() - started) }, 'mcp'),
        (e: unknown) => {
          const code = (e as { code?: unknown }).code;
          const line = { method: request.method, name: nameOf(request.params), code: code ?? 'internal', ms: Math.round(performance.now() - started) };
          if (code === undefined) log.warn({ ...line, err: (e as Error).message }, 'mcp');
          else log.info(line, 'mcp');
        },
      )
      .finally(() => link.dispose());
    return response;
  });

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
