/**
 * What a forward between instances is signed with (cluster/forwarder.ts sends, forward-verifier.ts
 * checks): the headers that carry the signatures and what they cover.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { PRINCIPAL_HEADER } from '../config.js';

export const SIGNATURE = 'x-mcpgw-signature';
export const AT = 'x-mcpgw-at';
export const FOR_PATH = 'x-mcpgw-path';
export const NONCE = 'x-mcpgw-nonce';
export const FOR_INSTANCE = 'x-mcpgw-for';
/**
 * The signature of everything but the body, with the body's length (`x-mcpgw-bytes`): checked before
 * the body is read, so that nothing but another instance makes this one read (and hold) a body.
 */
export const HEAD_SIGNATURE = 'x-mcpgw-head';
export const BYTES = 'x-mcpgw-bytes';
/** On the answer to a forward refused on the internal path for its signature: why (`forbidden`). */
export const REFUSED = 'x-mcpgw-refused';
/**
 * On the answer to a forward refused as a replay: its sender sent it once already (a reset connection,
 * the request sent again), so the first copy may have run; the sender tells its client `forward_cut`.
 */
export const REPLAYED = 'x-mcpgw-replayed';
/** On a forward: the owner's boot id it is signed for. On an answer to one: the owner's boot id. */
export const BOOT = 'x-mcpgw-boot';
/** How old a signature may be (clock skew between instances included). */
export const MAX_AGE_MS = 30_000;
/** The methods that are forwarded; only POST has a body. */
export const METHODS = new Set(['POST', 'GET', 'DELETE']);

/**
 * The headers a signature covers besides the method, target and body: who asks (the key, and the caller
 * a delegating key names), for which session, the nonce, for which instance and which of its boots, and
 * the trace the owner's span joins (`traceparent`: the sender's forward span).
 */
export const SIGNED_HEADERS = ['authorization', PRINCIPAL_HEADER, 'mcp-session-id', NONCE, FOR_INSTANCE, BOOT, 'traceparent'];

/**
 * HMAC-SHA256 over the time, the method, the target and the signed headers, one a line, then the body.
 * No line can hold a line break (neither an HTTP header value nor the target can, and the time is
 * digits) and there are always as many lines, so no two requests sign the same text; an absent header
 * signs as an empty one. `header` reads a header by lower-case name.
 */
export function sign(secret: string, at: string, method: string, target: string, body: string, header: (name: string) => string | null | undefined): string {
  let head = `${at}\n${method}\n${target}\n`;
  for (const h of SIGNED_HEADERS) head += `${header(h) ?? ''}\n`;
  return createHmac('sha256', secret).update(head).update(body).digest('hex');
}

/** Whether the hex signature `given` is `expected` (compared in constant time). */
export function signatureIs(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'hex');
  const b = Buffer.from(expected, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Signs `headers` (a forward's, kept) with the time `at`: the whole request, and its head with the body's length. */
export function signForward(secret: string, at: string, method: string, target: string, payload: string, headers: Record<string, string>): void {
  headers[AT] = at;
  headers[SIGNATURE] = sign(secret, at, method, target, payload, (name) => headers[name]);
  headers[BYTES] = String(Buffer.byteLength(payload));
  headers[HEAD_SIGNATURE] = sign(secret, `head:${at}`, method, target, headers[BYTES], (name) => headers[name]);
}
