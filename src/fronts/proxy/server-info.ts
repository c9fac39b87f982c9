/**
 * A server as the proxy tools show it (seed 001, `ServerInfo`): its name, where it is (the URL, or the
 * command line of a stdio server), whether it is connected, since when, and the last error. Nothing
 * secret leaves: no env or header values, no credentials or query values of a URL (the entry's or an
 * argument's), no argument that follows (or is) a flag named like a secret, and no argument that looks
 * like a token.
 */
import type { ServerConfig } from '../../config.js';
import { shownUrl } from '../../util/uri-for-log.js';
import type { ServerEntry } from './servers.js';

/** What is shown in place of a value kept back. */
const HIDDEN = '…';

/** Flag or variable names whose value is a secret (`--api-key x`, `--token=x`, `PASSWORD=x`). */
const SECRET_NAME = /(token|key|secret|passw(or)?d|pwd|auth|credential|cookie|session)/i;

/** Tokens that say what they are: OpenAI/Stripe-style `sk-`, GitHub's, Slack's, GitLab's, AWS access key ids, JWTs. */
const TOKEN_PREFIX = /^(?:[spr]k[-_]|gh[pousr]_|github_pat_|xox[abposr]-|glpat-|AKIA[0-9A-Z]{12}|eyJ[\w-]+\.)/;

/**
 * A positional argument that looks like a credential: a known token prefix, or a long run of letters
 * and digits with no path, package or host punctuation (`/`, `.`, `@`, `:`), such as a key pasted as is.
 */
function looksLikeToken(arg: string): boolean {
  if (TOKEN_PREFIX.test(arg)) return true;
  return arg.length >= 24 && /^[\w+=-]+$/.test(arg) && /\d/.test(arg) && /[a-z]/i.test(arg);
}

const isUrl = (arg: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(arg);

/**
 * A value as shown: a URL without its credentials and query values (`postgresql://user:pw@db/x`), a
 * connection string's secret-named parts kept back (`Server=db;Password=…`), a token kept back.
 */
function shownValue(value: string): string {
  if (isUrl(value)) return shownUrl(value);
  if (value.includes(';') && value.includes('=')) {
    return value
      .split(';')
      .map((part) => {
        const eq = part.indexOf('=');
        return eq > 0 && SECRET_NAME.test(part.slice(0, eq)) ? `${part.slice(0, eq)}=${HIDDEN}` : part;
      })
      .join(';');
  }
  return looksLikeToken(value) ? HIDDEN : value;
}

/**
 * A stdio server's arguments with secret-looking values kept back: the value of a flag or a `NAME=`
 * named like a secret, and in any other value a URL's credentials and query values, a connection
 * string's secret parts, a token (`-e DATABASE_URL=postgresql://admin:pw@db/prod` shows no password).
 */
export function shownArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  let hideNext = false;
  for (const arg of args) {
    if (hideNext && !arg.startsWith('-')) {
      out.push(HIDDEN);
      hideNext = false;
      continue;
    }
    hideNext = false;
    const eq = isUrl(arg) ? -1 : arg.indexOf('=');
    if (eq > 0) {
      const name = arg.slice(0, eq);
      out.push(`${name}=${SECRET_NAME.test(name) ? HIDDEN : shownValue(arg.slice(eq + 1))}`);
    } else {
      out.push(shownValue(arg));
      hideNext = arg.startsWith('-') && SECRET_NAME.test(arg);
    }
  }
  return out;
}

/** Where a server is: `{url}` (and its transport) or `{command, args}`. */
export function whereIs(config: ServerConfig): Record<string, unknown> {
  if (config.kind === 'http') {
    return { url: shownUrl(config.url), transport: config.transport, ...(config.protocol === '2026-07-28' ? { protocol: config.protocol } : {}) };
  }
  return { command: config.command, args: shownArgs(config.args ?? []) };
}

/** One `list_servers` entry. */
export function serverInfo(entry: ServerEntry): Record<string, unknown> {
  const h = entry.backend.health();
  return {
    name: entry.name,
    source: entry.source,
    ...whereIs(entry.config),
    status: h.state,
    connected: h.state === 'up',
    ...(h.connectedAt ? { connectedAt: h.connectedAt } : {}),
    ...(h.lastError ? { lastError: h.lastError } : {}),
  };
}
