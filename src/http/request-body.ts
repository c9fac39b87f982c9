/**
 * A POST body as the handlers need it: text within the size limit (enforced while it streams,
 * body.ts), then JSON; each failure is the error answer the client gets (413, or a parse error 400).
 */
import { WireCode } from '../errors.js';
import type { ParsedBody } from './app-options.js';
import { readBodyLimited } from './body.js';
import { refusal } from './replies.js';

/** The 415 refusal of a POST whose body is not declared JSON, or undefined. */
export function notJson(req: Request): Response | undefined {
  if ((req.headers.get('content-type') ?? '').toLowerCase().includes('application/json')) return undefined;
  return refusal(WireCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json', 415);
}

/** Largest POST body accepted, in bytes. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The body as text, its size limit enforced while it streams; or the error answer. */
export async function readText(req: Request): Promise<string | Response> {
  const read = await readBodyLimited(req, MAX_BODY_BYTES);
  if (read.ok) return read.text;
  return read.reason === 'too_large'
    ? refusal(WireCode.InvalidRequest, `Payload Too Large: the body must be at most ${MAX_BODY_BYTES} bytes`, 413)
    : refusal(WireCode.ParseError, 'Parse error: the body could not be read as UTF-8', 400);
}

/** `text` parsed as JSON; or the parse error answer. */
export function parseJson(text: string): ParsedBody | Response {
  try {
    return { value: JSON.parse(text) as unknown, text };
  } catch {
    return refusal(WireCode.ParseError, 'Parse error: the body is not valid JSON', 400);
  }
}

/** The body as JSON, its size limit enforced while it streams; or the error answer. */
export async function readJson(req: Request): Promise<ParsedBody | Response> {
  const text = await readText(req);
  return text instanceof Response ? text : parseJson(text);
}
