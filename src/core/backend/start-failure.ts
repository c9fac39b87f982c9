/** Why a backend session did not start: the innermost cause, and what its process said on stderr. */

/** A session that failed to start, with what its process said on stderr. */
export class StartFailure extends Error {
  constructor(
    cause: unknown,
    readonly stderr: readonly string[],
  ) {
    super(causeText(cause), { cause });
    this.name = 'StartFailure';
  }
}

/**
 * The innermost message of an error chain (`spawn foo ENOENT`, `connect ECONNREFUSED …`), without the
 * body of an HTTP error answer (`withoutResponseBody`).
 */
export function causeText(e: unknown): string {
  let cur: unknown = e;
  for (let i = 0; i < 5 && cur instanceof Error && cur.cause instanceof Error; i++) cur = cur.cause;
  return withoutResponseBody(cur instanceof Error ? cur.message : String(cur));
}

/**
 * `message` without the body of the HTTP error answer it quotes (`Error POSTing to endpoint (HTTP 401):
 * <body>`, as the SDK's transports and the gateway's own leg write it): what a backend answers may
 * echo what it was sent (a token in the URL or a header), and a backend's health is shown to every
 * principal (`list_servers`, `/readyz`, the admin page) and logged.
 */
export function withoutResponseBody(message: string): string {
  const at = message.search(/Error POSTing to endpoint(?: \(HTTP \d{3}\))?: /);
  if (at < 0) return message;
  const head = message.slice(at).match(/^Error POSTing to endpoint(?: \(HTTP \d{3}\))?/)![0];
  return `${message.slice(0, at)}${head} (its body not shown)`;
}
