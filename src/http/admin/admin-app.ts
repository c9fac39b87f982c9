/**
 * The admin listener's routes, on a port of their own (never the client port):
 * - `GET /metrics`: the Prometheus exposition;
 * - `GET /`: the live admin page (admin-page.ts), kept current by `GET /events` (SSE: the page's
 *   sections, rendered here, every `refreshMs`);
 * - `POST /calls/:id/cancel`, `POST /tasks/:id/cancel`, `POST /drain`: the operator's actions.
 *
 * Every route checks Host (DNS rebinding) and Origin (the page's own origin only) and, when a key is configured, the key: as a
 * bearer token (Prometheus `authorization`) or as the password of HTTP basic auth (a browser asks
 * for it). Actions need the `X-Admin-Action` header, which a cross-site form cannot send and a
 * cross-site script cannot send without a preflight this listener never grants.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Logger } from '../../log.js';
import { linkedController, sleep } from '../../util/abort.js';
import { checkOrigin, type OriginPolicy } from '../guards.js';
import type { AdminView } from './admin-view.js';
import { renderPage, renderSections } from './admin-page.js';
import { ADMIN_SCRIPT } from './admin-script.js';

export interface AdminOptions {
  readonly view: AdminView;
  readonly policy: OriginPolicy;
  /** The key every request must carry; undefined: none (loopback only, see config.ts). */
  readonly key?: string | undefined;
  readonly logger: Logger;
  /** How often the page's sections are sent (default 2 s). */
  readonly refreshMs?: number;
  /** Aborted when the gateway closes: live pages' streams end then. */
  readonly closed?: AbortSignal | undefined;
}

/** The header every action must carry (a cross-site request cannot, without a preflight). */
export const ACTION_HEADER = 'x-admin-action';

const REALM = 'Basic realm="mcp-mrtr-gateway admin", charset="UTF-8"';

export function createAdminApp(opts: AdminOptions): Hono {
  const app = new Hono();
  const allowed = keyCheck(opts.key);
  app.onError((e) => {
    opts.logger.error({ err: (e as Error).message }, 'unhandled error on the admin listener');
    return new Response('Internal error\n', { status: 500 });
  });
  app.use(async (c, next) => {
    const refused =
      checkOrigin({ hosts: opts.policy.hosts, origins: [], readable: new Set() }, c.req.header('host'), undefined) ??
      crossOrigin(c.req.header('host'), c.req.header('origin'));
    if (refused) return c.text(`${refused}\n`, 403);
    if (!allowed(c.req.header('authorization'))) return c.text('Unauthorized\n', 401, { 'www-authenticate': REALM });
    if (c.req.method === 'POST' && c.req.header(ACTION_HEADER) === undefined) return c.text(`Forbidden: actions need the ${ACTION_HEADER} header\n`, 403);
    c.header('cache-control', 'no-store');
    c.header('x-content-type-options', 'nosniff');
    c.header('x-frame-options', 'DENY');
    return next();
  });
  app.get('/metrics', async () => {
    const { contentType, text } = await opts.view.metrics();
    return new Response(text, { headers: { 'content-type': contentType } });
  });
  app.get('/', async (c) => {
    c.header('content-security-policy', "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self'");
    return c.html(renderPage(await opts.view.snapshot()));
  });
  app.get('/admin.js', (c) => c.body(ADMIN_SCRIPT, 200, { 'content-type': 'text/javascript; charset=utf-8' }));
  app.get('/events', (c) =>
    streamSSE(
      c,
      (stream) => liveSections(opts, stream),
      (e) => sectionsFailed(opts, e),
    ),
  );
  app.post('/calls/:id/cancel', (c) => done(opts, 'cancel a parked call', opts.view.cancelCall(c.req.param('id'))));
  app.post('/tasks/:id/cancel', (c) => done(opts, 'cancel a task', opts.view.cancelTask(c.req.param('id'))));
  app.post('/drain', () => {
    opts.logger.info({ action: 'drain' }, 'admin action');
    opts.view.drain();
    return Response.json({ ok: true }, { status: 202 });
  });
  return app;
}

type SseStream = Parameters<Parameters<typeof streamSSE>[1]>[0];

/**
 * The page's sections every `refreshMs` until the page goes away or the gateway closes (the wait
 * between two sends ends at once on either, and holds no timer that keeps the process alive).
 */
async function liveSections(opts: AdminOptions, stream: SseStream): Promise<void> {
  const every = opts.refreshMs ?? 2_000;
  const link = linkedController(opts.closed);
  stream.onAbort(() => link.controller.abort());
  const { signal } = link.controller;
  try {
    while (!signal.aborted) {
      await stream.writeSSE({ event: 'sections', data: JSON.stringify(renderSections(await opts.view.snapshot())) });
      await sleep(every, signal).catch(() => undefined);
    }
  } finally {
    link.dispose();
    await stream.close();
  }
}

async function sectionsFailed(opts: AdminOptions, e: Error): Promise<void> {
  opts.logger.warn({ err: e.message }, 'the admin page stream failed');
}

/** A refusal for a request another origin sent: the page's own requests come from the origin it was loaded from. */
function crossOrigin(host: string | undefined, origin: string | undefined): string | undefined {
  if (origin === undefined) return undefined;
  try {
    if (origin !== 'null' && host !== undefined && new URL(origin).host === host.toLowerCase()) return undefined;
  } catch {
    // not a URL: refused below
  }
  return 'Forbidden: Origin not allowed';
}

/** The answer to an action on one call or task: 200, or 404 when there was none such. */
function done(opts: AdminOptions, action: string, found: boolean): Response {
  opts.logger.info({ action, found }, 'admin action');
  return Response.json({ ok: found }, { status: found ? 200 : 404 });
}

/** Whether an Authorization header carries the key (bearer, or basic auth's password); any user name. */
function keyCheck(key: string | undefined): (authorization: string | undefined) => boolean {
  if (key === undefined) return () => true;
  const want = digest(key);
  return (authorization) => {
    const given = presentedKey(authorization ?? '');
    return given !== undefined && timingSafeEqual(digest(given), want);
  };
}

function presentedKey(authorization: string): string | undefined {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (!basic) return undefined;
  const text = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon >= 0 ? text.slice(colon + 1) : undefined;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
