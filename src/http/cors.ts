/**
 * Browser-based clients on another origin (CORS). A page may read the answers when its Origin passes
 * the Host/Origin policy (guards.ts) and is either a loopback one (`localhost`, `127.0.0.1`, `[::1]`,
 * any port: a page of this machine, as the policy accepts by default) or exactly one of
 * `allowedOrigins` (scheme, host and port; the policy itself compares hostnames only). The preflight
 * of an MCP path (OPTIONS) is answered for such an Origin with the methods the path takes and the
 * headers the page asked for (an `Mcp-Param-*` header is named by the tool, so none is fixed here); a
 * Host or Origin the policy refuses gets 403, as the request itself would. Those pages' answers say
 * they may read them and expose the headers a client needs (`Mcp-Session-Id`, `WWW-Authenticate`,
 * `Retry-After`, `Mcp-Protocol-Version`). A request without Origin (every client that is not a
 * browser page) is left as it is: one header read.
 */
import type { Context } from 'hono';
import { cors } from 'hono/cors';
import { WireCode } from '../errors.js';
import { checkOrigin, originAllowed, type OriginPolicy } from './guards.js';
import { refusal, withHeaders } from './replies.js';

/** The headers a page may read from an answer. */
const EXPOSED = ['mcp-session-id', 'mcp-protocol-version', 'www-authenticate', 'retry-after'];
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether the page of `origin` may read the answers (see above). */
function readable(policy: OriginPolicy, origin: string): boolean {
  if (origin === '' || !originAllowed(policy, origin) || !URL.canParse(origin)) return false;
  const url = new URL(origin);
  return policy.readable.has(url.origin) || ((url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK.has(url.hostname));
}
/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** Answers the preflight of an MCP path (`OPTIONS`) that takes `methods`. */
export function preflight(policy: OriginPolicy, methods: readonly string[]): (c: Context) => Promise<Response> {
  const answer = cors({
    origin: (origin) => (readable(policy, origin) ? origin : null),
    allowMethods: [...methods],
    exposeHeaders: EXPOSED,
    maxAge: PREFLIGHT_MAX_AGE,
  });
  return async (c) => {
    const refused = checkOrigin(policy, c.req.header('host'), c.req.header('origin'));
    if (refused) return refusal(WireCode.InvalidRequest, refused, 403);
    const res = await answer(c, async () => undefined);
    if (!(res instanceof Response)) throw new Error('the CORS preflight gave no answer');
    res.headers.set('allow', methods.join(', '));
    return res;
  };
}

/** `answer()`, readable by the page of the request's Origin when the policy accepts it. */
export function readableByOrigin(policy: OriginPolicy, c: Context, answer: () => Promise<Response> | Response): Promise<Response> | Response {
  const origin = c.req.header('origin');
  if (origin === undefined || !readable(policy, origin)) return answer();
  return Promise.resolve(answer()).then((res) => withCorsHeaders(res, origin));
}

function withCorsHeaders(res: Response, origin: string): Response {
  return withHeaders(res, (headers) => {
    headers.set('access-control-allow-origin', origin);
    headers.set('access-control-expose-headers', EXPOSED.join(', '));
    headers.append('vary', 'Origin');
  });
}
