/**
 * The HTTP surface (the only place that imports Hono): the routes, each served by a handler of its own
 * file. Each configured path serves one dialect (fronts/dialect.ts): POST runs the gate checks
 * (Host/Origin, bearer key, content type, Accept, a body limit enforced while the body streams), then
 * the dialect admits and handles the message and the answer goes out as JSON or SSE (post.ts).
 * GET/DELETE on a dialect path → 405 (2026-07-28 has no sessions or standalone streams) unless a legacy
 * session takes them (session-routes.ts). GET /healthz is liveness, GET /readyz readiness with each
 * backend's state (gate.ts). OPTIONS answers a browser's CORS preflight, and an accepted Origin may
 * read the answers (cors.ts). One error boundary turns anything thrown into a JSON-RPC error; unknown
 * paths get a JSON-RPC 404 naming the served paths, another method on a served path 405.
 *
 * Several instances: a request that continues what another live instance holds (an MRTR retry, a
 * task, a legacy session) is forwarded there and its answer streamed back; what another instance
 * forwarded here arrives on the internal path (forwarded.ts; spec/notes/cluster.md).
 */
import { Hono } from 'hono';
import { WireCode } from '../errors.js';
import type { AppOptions } from './app-options.js';
import { answerLifeOf } from './connection.js';
import { preflight, readableByOrigin } from './cors.js';
import { serveForwarded } from './forwarded.js';
import { jsonResponse } from './exchange.js';
import { serveHealth, serveReady } from './gate.js';
import { servePost } from './post.js';
import { methodNotAllowed, refusal } from './replies.js';
import { openSse, serveMessage, serveSession } from './session-routes.js';

export function createApp(opts: AppOptions): Hono {
  const app = new Hono();
  /** Every path answered here, for a 404 that points the way. */
  const served = [...opts.routes.keys(), ...(opts.sse ? [opts.sse.path, opts.sse.messagesPath] : []), '/healthz', '/readyz'];
  app.onError((e) => {
    opts.logger.error({ err: (e as Error).message }, 'unhandled error in the HTTP layer');
    return refusal(WireCode.InternalError, 'Internal error', 500);
  });
  /** The methods each served path takes (its 405 says which). */
  const methods = new Map<string, readonly string[]>([
    ['/healthz', ['GET']],
    ['/readyz', ['GET']],
  ]);
  for (const path of opts.routes.keys()) methods.set(path, ['GET', 'POST', 'DELETE']);
  if (opts.sse) methods.set(opts.sse.path, ['GET']).set(opts.sse.messagesPath, ['POST']);
  app.notFound((c) => {
    const taken = methods.get(c.req.path);
    if (taken) return refusal(WireCode.MethodNotFound, `Method Not Allowed: ${c.req.path} takes ${taken.join(', ')}`, 405, { allow: taken.join(', ') });
    return refusal(WireCode.MethodNotFound, `Not Found: no MCP endpoint at ${c.req.path} (served: ${served.join(', ')})`, 404);
  });
  const { policy } = opts;
  /** The preflight of a served path, naming the methods it takes. */
  const answerPreflight = (path: string) => preflight(policy, methods.get(path)!);

  app.get('/healthz', () => serveHealth(opts));
  const metadata = opts.resourceMetadata;
  // Public, and readable from a browser-based client on another origin (RFC 9728 §3).
  for (const path of metadata?.paths ?? [])
    app.get(path, () => jsonResponse(metadata!.document, 200, { 'access-control-allow-origin': '*', 'cache-control': 'max-age=300' }));
  app.get('/readyz', (c) => serveReady(opts, c.req.raw));
  for (const [path, dialect] of opts.routes) {
    const sessions = opts.sessions?.get(path);
    app.on(['GET', 'DELETE'], path, (c) => readableByOrigin(policy, c, () => serveSession(opts, c.req.raw, sessions, { path, forwarded: false })));
    app.on(['PUT', 'PATCH'], path, methodNotAllowed);
    app.options(path, answerPreflight(path));
    app.post(path, (c) =>
      readableByOrigin(policy, c, () => servePost(opts, c.req.raw, dialect, sessions, { path, forwarded: false, answerLife: answerLifeOf(c.env, c.req.raw) })),
    );
  }
  const forwarding = opts.forward;
  if (forwarding)
    app.on(['POST', 'GET', 'DELETE'], forwarding.internalPath, (c) => serveForwarded(opts, forwarding, c.req.raw, answerLifeOf(c.env, c.req.raw)));
  const sse = opts.sse;
  if (sse) {
    // The stream stays where it opened: that instance holds the session it opens (another one, while this one drains).
    app.get(sse.path, (c) => readableByOrigin(policy, c, () => openSse(opts, sse, c.req.raw, { path: sse.path, forwarded: false })));
    app.post(sse.messagesPath, (c) =>
      readableByOrigin(policy, c, () => serveMessage(opts, sse.route, c.req.raw, c.req.query('sessionId'), { path: sse.messagesPath, forwarded: false })),
    );
    app.options(sse.path, answerPreflight(sse.path));
    app.options(sse.messagesPath, answerPreflight(sse.messagesPath));
  }
  return app;
}
