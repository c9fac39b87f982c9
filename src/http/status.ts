/**
 * HTTP status for a JSON-RPC error produced by a handler. Where the 2026-07-28 spec fixes a status it
 * wins (basic/index.mdx error table; transports/streamable-http.mdx); everything else is 200.
 */
import { WireCode } from '../errors.js';

const FIXED: ReadonlyMap<number, number> = new Map([
  [WireCode.HeaderMismatch, 400],
  [WireCode.MissingRequiredClientCapability, 400],
  [WireCode.UnsupportedProtocolVersion, 400],
  [WireCode.MethodNotFound, 404],
  [WireCode.ParseError, 400],
  [WireCode.InvalidRequest, 400],
]);

export function httpStatusFor(code: number): number {
  return FIXED.get(code) ?? 200;
}
