/**
 * A URI as the gateway's log lines show it: a URI may carry a caller's values (`?token=…`) or
 * credentials (`https://user:password@…`), and neither its credentials nor its query's values nor its
 * fragment are ever logged (the admin page and the proxy tools hide them too).
 */

/** A URI as a log line shows it: no credentials (`user:password@`), its query's names without their values, no fragment. */
export function uriForLog(uri: string): string {
  const hash = uri.indexOf('#');
  const bare = (hash >= 0 ? uri.slice(0, hash) : uri).replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1');
  const q = bare.indexOf('?');
  if (q < 0) return bare;
  const names = bare
    .slice(q + 1)
    .split('&')
    .map((pair) => pair.split('=')[0]!)
    .filter(Boolean);
  return `${bare.slice(0, q)}?${names.map((n) => `${n}=…`).join('&')}`;
}

/**
 * What hides `uri`'s credentials and query values in a text that may quote it (an error's message):
 * undefined when it has none to hide.
 */
export function uriHider(uri: unknown): ((text: string) => string) | undefined {
  // Nothing to hide without credentials, a query or a fragment (most URIs: no work for them).
  if (typeof uri !== 'string' || !/[@?#]/.test(uri)) return undefined;
  const shown = uriForLog(uri);
  return shown === uri ? undefined : (text) => text.split(uri).join(shown);
}

/**
 * A URL as the gateway shows it where it names a server (`list_servers`, an `add_server` refusal): as
 * the URL parser reads it, however it is spelled (`https:user:pw@host` has credentials too), without
 * credentials, query values or fragment (the query's names stay: they say what is configured); `…` for
 * what is no URL.
 */
export function shownUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return '…';
  }
  const names = [...new Set(url.searchParams.keys())];
  return `${url.protocol}//${url.host}${url.pathname}${names.length ? `?${names.map((n) => `${n}=…`).join('&')}` : ''}`;
}
