/**
 * One request of the gateway, as an OAuth client, to an authorization server endpoint (the token
 * endpoint, RFC 6749 §4.4; the introspection endpoint, RFC 7662 §2.1): a form-encoded POST
 * authenticated with `client_secret_basic` (RFC 6749 §2.3.1), within a deadline and the caller's
 * signal, redirects refused (a secret never follows one). The answer is read as JSON. Errors say what
 * went wrong and where, never the secret.
 */
import { anySignal } from '../util/abort.js';

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
 * POSTs `form` to `url` as `client`, within `timeoutMs` and `signal`. Resolves with any HTTP answer;
 * rejects only when no answer came (unreachable, timed out, aborted, a redirect), with an Error naming
 * the URL and the cause.
 */
export async function postForm(
  url: string,
  client: ClientSecret,
  form: Record<string, string>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<EndpointAnswer> {
  const deadline = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      redirect: 'error',
      headers: { authorization: basicAuthorization(client), accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      signal: signal ? anySignal([signal, deadline]) : deadline,
    });
  } catch (e) {
    if (signal?.aborted) throw e;
    const why = deadline.aborted ? `no answer within ${timeoutMs} ms` : causeOf(e);
    throw new Error(`${url}: ${why}`);
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
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
