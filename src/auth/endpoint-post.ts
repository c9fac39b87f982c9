/**
 * One request of the gateway, as an OAuth client, to an authorization server endpoint (the token
 * endpoint, RFC 6749 §4.4; the introspection endpoint, RFC 7662 §2.1): a form-encoded POST
 * authenticated with `client_secret_basic` (RFC 6749 §2.3.1), within a deadline and the caller's
 * signal, redirects refused (a secret never follows one). The answer is read as JSON. Errors say what
 * went wrong and where, never the secret.
 */
import { abortReason, anySignal, raceSignal } from '../util/abort.js';

/** A confidential client of an authorization server. */
export interface ClientSecret {
  readonly clientId: string;
  readonly clientSecret: string;
}

export interface EndpointAnswer {
  readonly status: number;
  /** The JSON body (undefined when the body is not a JSON object). */
  readonly body: Record<string, unknown> | undefined;
}

/** `client_secret_basic`: both parts form-urlencoded before base64 (RFC 6749 §2.3.1). */
export function basicAuthorization({ clientId, clientSecret }: ClientSecret): string {
  const encode = (s: string): string => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

/**
 * POSTs `form` to `url` as `client`, within `timeoutMs` and `signal`, its body read included. Resolves
 * with any HTTP answer; rejects only when no answer came (unreachable, timed out, aborted, a redirect),
 * with an Error naming the URL and the cause.
 *
 * A redirect is refused here rather than with `redirect: 'error'`: on Node 20.20 a fetch made so stops
 * hearing its signal once the answer's head has come (a collection takes what linked them), so an
 * endpoint that sent its head and then nothing held the body read, and the request behind it, for ever
 * under GC pressure (`redirect: 'manual'` and the default keep it). The body is also read racing the
 * deadline, so no later change of the runtime can make it wait past it.
 */
export async function postForm(
  url: string,
  client: ClientSecret,
  form: Record<string, string>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<EndpointAnswer> {
  const deadline = AbortSignal.timeout(timeoutMs);
  const within = signal ? anySignal([signal, deadline]) : deadline;
  const failed = (e: unknown): Error => {
    if (signal?.aborted) return abortReason(signal);
    return new Error(`${url}: ${deadline.aborted ? `no answer within ${timeoutMs} ms` : causeOf(e)}`);
  };
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      redirect: 'manual', // never followed: refused below (see above for why not 'error')
      headers: { authorization: basicAuthorization(client), accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      signal: within,
    });
  } catch (e) {
    throw failed(e);
  }
  if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`${url}: redirected (HTTP ${res.status}), not followed: a client secret never follows a redirect`);
  }
  let body: unknown;
  try {
    body = await raceSignal(res.json() as Promise<unknown>, within);
  } catch (e) {
    if (within.aborted) throw failed(e);
    body = undefined; // not JSON
  }
  return { status: res.status, body: body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined };
}

/** The innermost message of a fetch failure (`connect ECONNREFUSED 127.0.0.1:9`, not `fetch failed`). */
function causeOf(e: unknown): string {
  let cur = e;
  for (let i = 0; i < 5 && cur instanceof Error && cur.cause instanceof Error; i++) cur = cur.cause;
  return cur instanceof Error ? cur.message : String(cur);
}

/** An authorization server's error answer as text: `HTTP 401 invalid_client (description)`, bounded. */
export function describeRefusal(answer: EndpointAnswer): string {
  const error = typeof answer.body?.['error'] === 'string' ? ` ${answer.body['error']}` : '';
  const description = typeof answer.body?.['error_description'] === 'string' ? ` (${answer.body['error_description']})` : '';
  return `HTTP ${answer.status}${error}${description}`.slice(0, 300);
}
