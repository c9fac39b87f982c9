/**
 * The gate every MCP request passes, and the health endpoints beside it: Host/Origin (checked where a
 * forwarded request first arrived), then the bearer key. `GET /healthz` is liveness; `GET /readyz`
 * readiness with each backend's state, behind the same checks (backend errors can name internal
 * addresses).
 */
import { PRINCIPAL_HEADER } from '../config.js';
import { WireCode } from '../errors.js';
import type { Caller } from '../fronts/dialect.js';
import type { AppOptions } from './app-options.js';
import { jsonResponse } from './exchange.js';
import { checkOrigin } from './guards.js';
import { refusal, thrownReply } from './replies.js';
import { headersForStatus } from './status.js';

type GateOptions = Pick<AppOptions, 'policy' | 'authenticate'>;

/**
 * The caller's principal, or the refusal: 403 for Host/Origin; 401 without a valid key or token, 403
 * for a token without the scopes needed, each with the `WWW-Authenticate` challenge a client follows;
 * 503 (`authorization_unavailable`, Retry-After) for a token that could not be checked.
 * A delegating key's request (an edge handler's) runs as `<key principal>/<Mcp-Gateway-Principal>`;
 * the header with any other key, or with none, is refused 403.
 */
export async function gate(opts: GateOptions, req: Request, forwarded = false): Promise<Caller | Response> {
  const refused = forwarded ? undefined : checkOrigin(opts.policy, req.headers.get('host') ?? undefined, req.headers.get('origin') ?? undefined);
  if (refused) return refusal(WireCode.InvalidRequest, refused, 403);
  const auth = await opts.authenticate(req.headers.get('authorization') ?? undefined);
  if (!auth.ok) {
    if (auth.status === 503) return thrownReply(null, auth.error);
    return refusal(WireCode.InvalidRequest, auth.message, auth.status, { 'www-authenticate': auth.challenge });
  }
  const named = req.headers.get(PRINCIPAL_HEADER);
  if (named === null) return { principal: auth.principal, tokenScopes: auth.scopes };
  // Fail closed: a front that names its callers to a gateway that would not keep them apart must hear so.
  if (!auth.delegates) return refusal(WireCode.InvalidRequest, `Forbidden: ${PRINCIPAL_HEADER} needs an API key that delegates`, 403);
  const caller = delegatedName(named);
  if (caller === undefined)
    return refusal(WireCode.InvalidRequest, `Bad Request: ${PRINCIPAL_HEADER} must be a URI-encoded name of 1 to 256 printable characters`, 400);
  return { principal: `${auth.principal}/${caller}`, tokenScopes: auth.scopes };
}

/** The caller a delegating front names (URI-encoded; 1 to 256 characters once decoded, none a control character), or undefined. */
function delegatedName(header: string): string | undefined {
  let name: string;
  try {
    name = decodeURIComponent(header);
  } catch {
    return undefined;
  }
  return name.length >= 1 && name.length <= 256 && !/[\u0000-\u001f\u007f]/.test(name) ? name : undefined;
}

/** `GET /healthz`: 200 while serving, 503 once the gateway drains or closes. */
export function serveHealth(opts: Pick<AppOptions, 'isServing'>): Response {
  return opts.isServing() ? jsonResponse({ status: 'ok' }, 200) : jsonResponse({ status: 'closing' }, 503);
}

/** `GET /readyz`: each backend's state, 200 when ready; with API keys configured, only key holders see it. */
export async function serveReady(opts: GateOptions & Pick<AppOptions, 'readiness'>, req: Request): Promise<Response> {
  const refused = checkOrigin(opts.policy, req.headers.get('host') ?? undefined, req.headers.get('origin') ?? undefined);
  if (refused) return jsonResponse({ error: refused }, 403);
  const auth = await opts.authenticate(req.headers.get('authorization') ?? undefined);
  if (!auth.ok) {
    if (auth.status === 503) return jsonResponse({ error: auth.error.message }, 503, headersForStatus(503));
    return jsonResponse({ error: auth.message }, auth.status, { 'www-authenticate': auth.challenge });
  }
  const { ready, body } = await opts.readiness();
  return jsonResponse(body, ready ? 200 : 503);
}
