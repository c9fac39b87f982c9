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
  if (typeof uri !== 'string') return undefined;
  const shown = uriForLog(uri);
  return shown === uri ? undefined : (text) => text.split(uri).join(shown);
}
