/**
 * A POST body as the handlers need it: text within the size limit (enforced while it streams,
 * body.ts), then JSON; each failure is the error answer the client gets (413, or a parse error 400).
 */
import { WireCode } from '../errors.js';
import type { ParsedBody } from './app-options.js';
import { readBodyLimited } from './body.js';
import { errorBody, refusal } from './replies.js';
import { jsonResponse } from './exchange.js';
import { TooDeepError, checkDepth } from '../util/canonical-json.js';

/** The 415 refusal of a POST whose body is not declared JSON, or undefined. */
export function notJson(req: { readonly headers: { get(name: string): string | null } }): Response | undefined {
  // The media type itself (`application/json; charset=utf-8` is one), not any header that names it somewhere.
  const type = (req.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type === 'application/json') return undefined;
  return refusal(WireCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json', 415);
}

/** Largest POST body accepted, in bytes. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The body as text, its size limit (`maxBytes`, at most MAX_BODY_BYTES) enforced while it streams; or the error answer. */
export async function readText(req: Request, maxBytes = MAX_BODY_BYTES): Promise<string | Response> {
  const limit = Math.min(maxBytes, MAX_BODY_BYTES);
  const read = await readBodyLimited(req, limit);
  if (read.ok) return read.text;
  return read.reason === 'too_large'
    ? refusal(WireCode.InvalidRequest, `Payload Too Large: the body must be at most ${limit} bytes`, 413)
    : refusal(WireCode.ParseError, 'Parse error: the body could not be read as UTF-8', 400);
}

/**
 * `text` parsed as JSON, nested at most MAX_JSON_DEPTH levels deep; or the error answer. JSON.parse
 * takes any depth, but what reads the message after it (schemas, the digest of a call's request)
 * recurses: a message nested thousands of levels deep in `_meta` overflowed the stack there (a 500).
 */
export function parseJson(text: string): ParsedBody | Response {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return refusal(WireCode.ParseError, 'Parse error: the body is not valid JSON', 400);
  }
  try {
    checkDepth(value);
  } catch (e) {
    if (!(e instanceof TooDeepError)) throw e;
    // Its params are what nests (the envelope is two levels): answered under the request's id.
    return jsonResponse(errorBody(idOf(value), WireCode.InvalidParams, `Invalid params: the ${e.message}`), 400);
  }
  return { value, text };
}

/** The id of a JSON-RPC request `value` may be (null for anything else: a batch, a notification). */
function idOf(value: unknown): string | number | null {
  const id = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** The body as JSON, its size limit enforced while it streams; or the error answer. */
export async function readJson(req: Request): Promise<ParsedBody | Response> {
  const text = await readText(req);
  return text instanceof Response ? text : parseJson(text);
}
