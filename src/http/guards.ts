/**
 * Gate checks before any JSON-RPC processing: Host and Origin (DNS rebinding protection,
 * transports/streamable-http.mdx "Security": invalid Origin → 403). Who is calling is auth/'s.
 */
import { localhostAllowedHostnames, validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';

export interface OriginPolicy {
  /** Hostnames accepted in Host; undefined = any (bound to a wildcard address with no list). */
  readonly hosts: readonly string[] | undefined;
  /** Hostnames accepted in Origin. */
  readonly origins: readonly string[];
  /** Origins (`scheme://host[:port]`, exactly as configured in `allowedOrigins`) whose pages may read the answers (cors.ts). */
  readonly readable: ReadonlySet<string>;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '[::]']);

/** Builds the policy from the bind host and the configured extras. */
export function originPolicy(bindHost: string, allowedHosts: readonly string[], allowedOrigins: readonly string[]): OriginPolicy {
  const local = localhostAllowedHostnames();
  const originHosts = allowedOrigins.map((o) => {
    try {
      return new URL(o).hostname;
    } catch {
      return o;
    }
  });
  const hosts = WILDCARDS.has(bindHost) && allowedHosts.length === 0 ? undefined : [...local, ...(WILDCARDS.has(bindHost) ? [] : [bindHost]), ...allowedHosts];
  const readable = new Set(allowedOrigins.flatMap((o) => (URL.canParse(o) ? [new URL(o).origin] : [])));
  return { hosts, origins: [...local, ...allowedHosts, ...originHosts], readable };
}

/** A reason to refuse the request, or undefined. */
export function checkOrigin(policy: OriginPolicy, host: string | undefined, origin: string | undefined): string | undefined {
  if (policy.hosts && !accepts(policy, 'host', host, (h) => validateHostHeader(h, [...policy.hosts!]).ok)) return 'Forbidden: Host not allowed';
  if (origin !== undefined && !originAllowed(policy, origin)) return 'Forbidden: Origin not allowed';
  return undefined;
}

/** Whether a request from `origin` (a browser page's) may be served. */
export function originAllowed(policy: OriginPolicy, origin: string): boolean {
  return origin !== 'null' && accepts(policy, 'origin', origin, (o) => validateOriginHeader(o, [...policy.origins]).ok);
}

/** How many accepted values of each header a policy remembers: a client sends the same few, and odd ones cannot grow it. */
const REMEMBERED = 16;
/** Host and Origin values each policy accepted (the SDK's check parses a URL; it runs on every request). */
const accepted = new WeakMap<OriginPolicy, { host: Set<string>; origin: Set<string> }>();

/** Whether `value` passes `check`, remembered for a value that did (only accepted values are kept). */
function accepts(policy: OriginPolicy, header: 'host' | 'origin', value: string | undefined, check: (value: string | undefined) => boolean): boolean {
  let seen = accepted.get(policy);
  if (value !== undefined && seen?.[header].has(value)) return true;
  if (!check(value)) return false;
  if (value === undefined) return true;
  if (!seen) accepted.set(policy, (seen = { host: new Set(), origin: new Set() }));
  if (seen[header].size < REMEMBERED) seen[header].add(value);
  return true;
}
