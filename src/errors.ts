/**
 * Wire errors vs local errors.
 *
 * Wire errors are JSON-RPC errors with the spec's codes (`WireCode`, 2026-07-28 basic/index.mdx and
 * schema.ts): they are thrown as the SDK's `ProtocolError`. Local failures are `GatewayError`s with a
 * string code that never crosses the wire as-is: `toWireError` is the one boundary that turns any thrown
 * value into a JSON-RPC error object (-32603 for the unexpected, never -32700/-32602 from a catch-all).
 */
import { ProtocolError } from '@modelcontextprotocol/server';

export { ProtocolError };

/** JSON-RPC error codes the gateway emits. */
export const WireCode = {
  /** Invalid JSON. */
  ParseError: -32700,
  /** Not a JSON-RPC request object. */
  InvalidRequest: -32600,
  /** Unknown method, or a capability the gateway does not advertise (HTTP 404). */
  MethodNotFound: -32601,
  /** Bad params: missing `_meta`, unknown tool/prompt/resource, bad cursor, bad requestState or inputResponses. */
  InvalidParams: -32602,
  /** Anything unexpected, and local failures such as an unavailable backend. */
  InternalError: -32603,
  /** SEP-2243 header disagrees with the body or is missing (HTTP 400). */
  HeaderMismatch: -32020,
  /** The request needs a client capability it did not declare (HTTP 400). */
  MissingRequiredClientCapability: -32021,
  /** The requested protocol version is not served (HTTP 400). */
  UnsupportedProtocolVersion: -32022,
} as const;
export type WireCodeValue = (typeof WireCode)[keyof typeof WireCode];

/** A JSON-RPC error object as it goes on the wire. */
export interface WireErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** Local failure kinds. */
export type GatewayErrorCode =
  'backend_unavailable' | 'backend_closed' | 'backend_timeout' | 'parked_call_limit' | 'gateway_closing' | 'pool_exhausted' | 'cancelled';

const localMessages: Record<GatewayErrorCode, string> = {
  backend_unavailable: 'The backend server is unavailable',
  backend_closed: 'The backend connection closed before the call finished',
  backend_timeout: 'The backend did not answer in time',
  parked_call_limit: 'Too many calls are waiting for input; answer or abandon some first',
  gateway_closing: 'The gateway is shutting down',
  pool_exhausted: 'No backend session became free in time',
  cancelled: 'The request was cancelled',
};

/** A local failure. Its message may name a backend, never a payload or secret. */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly detail: string | undefined;
  constructor(code: GatewayErrorCode, detail?: string, options?: { cause?: unknown }) {
    super(detail ? `${localMessages[code]}: ${detail}` : localMessages[code], options);
    this.name = 'GatewayError';
    this.code = code;
    this.detail = detail;
  }
}

function hasNumericCode(e: unknown): e is { code: number; message: string; data?: unknown } {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'number' && typeof (e as { message?: unknown }).message === 'string';
}

/** v1 McpError prefixes its message with "MCP error <code>: "; the wire carries the bare text. */
function bareMessage(message: string): string {
  return message.replace(/^MCP error -?\d+: /, '');
}

/**
 * The boundary: any thrown value → JSON-RPC error object.
 * ProtocolError / McpError keep their code and data; GatewayError → -32603 with `data.reason`;
 * anything else → -32603 "Internal error" (its message is not leaked).
 */
export function toWireError(e: unknown): WireErrorObject {
  if (e instanceof GatewayError) {
    return { code: WireCode.InternalError, message: e.message, data: { reason: e.code } };
  }
  if (hasNumericCode(e) && Number.isInteger(e.code)) {
    const out: WireErrorObject = { code: e.code, message: bareMessage(e.message) };
    if (e.data !== undefined) out.data = e.data;
    return out;
  }
  return { code: WireCode.InternalError, message: 'Internal error' };
}

/** Shorthand for a -32602 ProtocolError. */
export function invalidParams(message: string, data?: unknown): ProtocolError {
  return new ProtocolError(WireCode.InvalidParams, message, data);
}

/** A JSON-RPC error answer (negative integer code), as opposed to a transport failure (e.g. HTTP 404). */
export function isJsonRpcError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'number' && Number.isInteger(code) && code < 0;
}
