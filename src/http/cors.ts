/**
 * Browser-based clients on another origin (CORS, for the origins the Host/Origin policy accepts:
 * guards.ts). The preflight of an MCP path (OPTIONS) is answered for an accepted Host and Origin with
 * the methods the path may take and the headers the page asked for (an `Mcp-Param-*` header is named by
 * the tool, so none is fixed here), and refused 403 otherwise, as the request itself would be. An
 * accepted Origin's answers say it may read them and the headers a client needs (`Mcp-Session-Id`,
 * `WWW-Authenticate`, `Retry-After`, `Mcp-Protocol-Version`). A request without Origin (every client
 * that is not a browser page) is left as it is: one header read.
 */
import type { Context } from 'hono';
import { cors } from 'hono/cors';
import { WireCode } from '../errors.js';
import { checkOrigin, originAllowed, type OriginPolicy } from './guards.js';
import { refusal } from './replies.js';

/** The headers a page may read from an answer. */
const EXPOSED = ['mcp-session-id', 'mcp-protocol-version', 'www-authenticate', 'retry-after'];
/** The methods an MCP path may take: POST, and GET/DELETE for legacy sessions and streams. */
const METHODS = ['GET', 'POST', 'DELETE'];
/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** Answers the preflight of an MCP path (`OPTIONS`). */
export function preflight(policy: OriginPolicy): (c: Context) => Promise<Response> {
  const answer = cors({
    origin: (origin) => (origin !== '' && originAllowed(policy, origin) ? origin : null),
    allowMethods: METHODS,
    exposeHeaders: EXPOSED,
    maxAge: PREFLIGHT_MAX_AGE,
  });
  return async (c) => {
    const refused = checkOrigin(policy, c.req.header('host'), c.req.header('origin'));
    if (refused) return refusal(WireCode.InvalidRequest, refused, 403);
    const res = await answer(c, async () => undefined);
    if (!(res instanceof Response)) throw new Error('the CORS preflight gave no answer');
    res.headers.set('allow', METHODS.join(', '));
    return res;
  };
}

/** `answer()`, readable by the page of the request's Origin when the policy accepts it. */
export function readableByOrigin(policy: OriginPolicy, c: Context, answer: () => Promise<Response> | Response): Promise<Response> | Response {
  const origin = c.req.header('origin');
  if (origin === undefined || !originAllowed(policy, origin)) return answer();
  return Promise.resolve(answer()).then((res) => withCorsHeaders(res, origin));
}

function withCorsHeaders(res: Response, origin: string): Response {
  const set = (headers: Headers): void => {
    headers.set('access-control-allow-origin', origin);
    headers.set('access-control-expose-headers', EXPOSED.join(', '));
    headers.append('vary', 'Origin');
  };
  try {
    set(res.headers);
    return res;
  } catch {
    // Immutable headers (a response this gateway did not build): a copy carries them.
    const headers = new Headers(res.headers);
    set(headers);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}
