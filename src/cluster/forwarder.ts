/**
 * Forwarding a request to the instance that must serve it (cluster mode): the request goes to that
 * instance's internal URL on `INTERNAL_PATH`, signed with the cluster secret (HMAC-SHA256 over the time,
 * the public path and the body), and its answer — JSON or an SSE stream, progress included — is passed
 * back as it comes. A request on the internal path without a valid, fresh signature is refused, so
 * nothing but another instance can use it.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const INTERNAL_PATH = '/_cluster/forward';
const SIGNATURE = 'x-mcpgw-signature';
const AT = 'x-mcpgw-at';
const FOR_PATH = 'x-mcpgw-path';
/** How old a signature may be (clock skew between instances included). */
const MAX_AGE_MS = 30_000;
/** The request headers that travel with a forwarded request. */
const PASSED = ['content-type', 'accept', 'authorization', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'last-event-id'];

export interface ForwarderDeps {
  readonly secret: string;
  /** The internal URLs of the live instances. */
  readonly urlOf: (instanceId: string) => Promise<string | undefined>;
  readonly now?: () => number;
}

function sign(secret: string, at: string, path: string, body: string): string {
  const digest = createHash('sha256').update(body).digest('hex');
  return createHmac('sha256', secret).update(`${at}\n${path}\n${digest}`).digest('hex');
}

export function createForwarder(deps: ForwarderDeps) {
  const now = deps.now ?? Date.now;
  return {
    internalPath: INTERNAL_PATH,

    async send(owner: string, path: string, req: Request, body: string): Promise<Response | undefined> {
      const base = await deps.urlOf(owner);
      if (!base) return undefined;
      const headers = new Headers();
      for (const name of PASSED) {
        const v = req.headers.get(name);
        if (v !== null) headers.set(name, v);
      }
      req.headers.forEach((v, name) => {
        if (name.startsWith('mcp-param-')) headers.set(name, v);
      });
      const at = String(now());
      headers.set(AT, at);
      headers.set(FOR_PATH, path);
      headers.set(SIGNATURE, sign(deps.secret, at, path, body));
      let res: Response;
      try {
        res = await fetch(new URL(INTERNAL_PATH, base), { method: 'POST', headers, body, signal: req.signal });
      } catch {
        return undefined; // unreachable: served here, where the retry is told what it can be told
      }
      const out = new Headers();
      for (const name of ['content-type', 'cache-control', 'retry-after', 'www-authenticate']) {
        const v = res.headers.get(name);
        if (v !== null) out.set(name, v);
      }
      return new Response(res.body, { status: res.status, headers: out });
    },

    verify(req: Request, body: string): string | undefined {
      const at = req.headers.get(AT);
      const path = req.headers.get(FOR_PATH);
      const given = req.headers.get(SIGNATURE);
      if (at === null || path === null || given === null || !/^\d+$/.test(at)) return undefined;
      if (Math.abs(now() - Number(at)) > MAX_AGE_MS) return undefined;
      const expected = Buffer.from(sign(deps.secret, at, path, body), 'hex');
      const actual = Buffer.from(given, 'hex');
      return actual.length === expected.length && timingSafeEqual(actual, expected) ? path : undefined;
    },
  };
}
