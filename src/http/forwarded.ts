/**
 * Several instances: a request another instance forwarded here (spec/notes/cluster.md). Its signature
 * covers the method, the public path and query, and the body; once checked (and its nonce spent) it is
 * served as if it had arrived on that public path, but never forwarded again.
 */
import { WireCode } from '../errors.js';
import type { AppOptions, Arrival, Forwarding } from './app-options.js';
import type { AnswerLife } from './connection.js';
import { refusal, withHeaders } from './replies.js';
import { parseJson, readText } from './request-body.js';
import { servePost } from './post.js';
import { openSse, serveMessage, serveSession } from './session-routes.js';

type Target = { readonly path: string; readonly query: URLSearchParams };

/** Serves a forwarded POST, GET or DELETE on the internal path. */
export async function serveForwarded(opts: AppOptions, forwarding: Forwarding, req: Request, answerLife?: () => AnswerLife): Promise<Response> {
  // Its head first: a body is read only for a request another instance signed, and only as long as it said.
  const head = forwarding.precheck(req);
  if (!head.ok) return withHeader(refused(opts, forwarding, head.error), forwarding.answerHeader);
  const text = req.method === 'POST' ? await readText(req, head.value.bytes) : '';
  if (text instanceof Response) return withHeader(text, forwarding.answerHeader);
  const target = await verify(opts, forwarding, req, text);
  return withHeader(target instanceof Response ? target : await serveAt(opts, req, target, text, answerLife), forwarding.answerHeader);
}

/** `res` with the header every answer to a forwarded request carries. */
function withHeader(res: Response, [name, value]: readonly [string, string]): Response {
  return withHeaders(res, (headers) => headers.set(name, value));
}

function forbidden(headers: Record<string, string> = {}): Response {
  return refusal(WireCode.InvalidRequest, 'Forbidden: not a request forwarded by an instance of this cluster', 403, headers);
}

/** The public target of a forwarded request whose signature holds and whose nonce was not spent; or the refusal. */
async function verify(opts: AppOptions, forwarding: Forwarding, req: Request, text: string): Promise<Target | Response> {
  const verdict = await forwarding.verify(req, text);
  return verdict.ok ? verdict.value : refused(opts, forwarding, verdict.error);
}

/** The answer to a forwarded request refused for `why`. */
function refused(opts: AppOptions, forwarding: Forwarding, why: 'forbidden' | 'replayed' | 'misdirected'): Response {
  if (why === 'misdirected') {
    return refusal(WireCode.InvalidRequest, 'Misdirected: this forwarded request was not signed for this run of this instance; send it again', 421);
  }
  // A replay was served once: never marked, so its sender does not serve it a second time.
  if (why === 'replayed') {
    opts.logger.warn({}, 'a forwarded request was refused: it was already served (a replay)');
    return refusal(WireCode.InvalidRequest, 'Forbidden: this forwarded request was already served once (a replay)', 403, { [forwarding.replayedHeader]: '1' });
  }
  // Marked as the internal path's refusal of its signature: a sender of this cluster serves the request where it arrived.
  return forbidden({ [forwarding.refusedHeader]: why });
}

/** Serves a verified forwarded request on its public path: the 2024 SSE paths, or a dialect path. */
function serveAt(opts: AppOptions, req: Request, target: Target, text: string, answerLife: (() => AnswerLife) | undefined): Promise<Response> | Response {
  const arrival: Arrival = { path: target.path, forwarded: true, ...(answerLife ? { answerLife } : {}) };
  const sse = opts.sse;
  if (sse && req.method === 'POST' && target.path === sse.messagesPath) {
    return serveMessage(opts, sse.route, req, target.query.get('sessionId') ?? undefined, arrival, text);
  }
  if (sse && req.method === 'GET' && target.path === sse.path) return openSse(opts, sse, req, arrival);
  const dialect = opts.routes.get(target.path);
  if (!dialect) return forbidden();
  const sessions = opts.sessions?.get(target.path);
  if (req.method !== 'POST') return serveSession(opts, req, sessions, arrival);
  const body = parseJson(text);
  return body instanceof Response ? body : servePost(opts, req, dialect, sessions, { ...arrival, body });
}
