/**
 * Resource URIs as the client gives them (`resources/read`, `resources/subscribe`/`unsubscribe`): the
 * spec types them `string` with format `uri` (2025-11-25 and 2026-07-28 schema.ts `Resource.uri`), an
 * absolute URI in RFC 3986's sense (§4.3: a scheme, then `:`). A string that is not one is the client's
 * mistake, answered -32602 with a message that says so, before any backend sees it (a backend's own
 * URL parser would answer -32603 "Invalid URL", or take it). Lenient otherwise: a gateway passes on
 * what it does not need to judge (spaces, non-ASCII, any scheme).
 */
import { invalidParams, type ProtocolError } from '../errors.js';

/** RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ":". */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
/** C0 controls, DEL and C1 controls: never part of a URI (RFC 3986 §2; RFC 3987 §2.2 for IRIs). */
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;
/** How much of a bad URI goes back in the error (it is the client's own text). */
const ECHO = 200;

/** Why `uri` is not a resource URI, or undefined when it is one. */
export function resourceUriProblem(uri: unknown): string | undefined {
  if (typeof uri !== 'string' || uri.length === 0) return 'uri must be a non-empty string';
  if (CONTROL.test(uri)) return 'uri must not contain control characters';
  if (!SCHEME.test(uri)) return 'uri must be an absolute URI with a scheme (RFC 3986), such as file:///notes.txt or https://example.com/a';
  return undefined;
}

/** The -32602 error for a bad resource URI (`data.uri` echoes the start of it), or undefined for a good one. */
export function resourceUriError(uri: unknown): ProtocolError | undefined {
  const problem = resourceUriProblem(uri);
  if (problem === undefined) return undefined;
  return invalidParams(`Invalid params: ${problem}`, typeof uri === 'string' ? { uri: uri.slice(0, ECHO) } : undefined);
}
