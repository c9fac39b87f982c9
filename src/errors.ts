/**
 * Wire errors vs local errors.
 *
 * Wire errors are JSON-RPC errors with the spec's codes (`WireCode`, 2026-07-28 basic/index.mdx and
 * schema.ts): they are thrown as the SDK's `ProtocolError`. Local failures are `GatewayError`s with a
 * string code that never crosses the wire as-is: `toWireError` is the one boundary that turns any thrown
 * value into a JSON-RPC error object (-32603 for the unexpected, never -32700/-32602 from a catch-all).
 */
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

export { ProtocolError };

/**
 * JSON-RPC error codes the gateway emits: the SDK's `ProtocolErrorCode` plus the one 2026-07-28 code
 * it does not name yet.
 */
export const WireCode = {
  ParseError: ProtocolErrorCode.ParseError,
  InvalidRequest: ProtocolErrorCode.InvalidRequest,
  /** Unknown method, or a capability the gateway does not advertise (HTTP 404). */
  MethodNotFound: ProtocolErrorCode.MethodNotFound,
  /** Bad params: missing `_meta`, unknown tool/prompt/resource, bad cursor, bad requestState or inputResponses. */
  InvalidParams: ProtocolErrorCode.InvalidParams,
  /** Anything unexpected, and local failures such as an unavailable backend. */
  InternalError: ProtocolErrorCode.InternalError,
  /** The request needs a client capability it did not declare (HTTP 400). */
  MissingRequiredClientCapability: ProtocolErrorCode.MissingRequiredClientCapability,
  /** The requested protocol version is not served (HTTP 400). */
  UnsupportedProtocolVersion: ProtocolErrorCode.UnsupportedProtocolVersion,
  /** SEP-2243 header disagrees with the body or is missing (HTTP 400; 2026-07-28 basic/index.mdx). */
  HeaderMismatch: -32020,
} as const;

/** A JSON-RPC error object as it goes on the wire. */
export interface WireErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * Local failure kinds: one table with the message a client sees and the HTTP status of the answer
 * (200 unless the failure means "not now", which a client or balancer should retry elsewhere).
 */
const LOCAL_ERRORS = {
  backend_unavailable: { message: 'The backend server is unavailable', status: 200 },
  backend_closed: { message: 'The backend connection closed before the call finished', status: 200 },
  backend_timeout: { message: 'The backend did not answer in time', status: 200 },
  parked_call_limit: { message: 'Too many calls are waiting for input; answer or abandon some first', status: 200 },
  task_limit: { message: 'Too many tasks are open for this principal; wait for some to finish or cancel them', status: 200 },
  task_expired: { message: 'The task ran past its ttlMs and was cancelled', status: 200 },
  gateway_closing: { message: 'The gateway is shutting down', status: 200 },
  gateway_draining: { message: 'The gateway is shutting down and takes no new requests; retry on another instance', status: 503 },
  pool_exhausted: { message: 'No backend session became free in time', status: 200 },
  /** Redis (the cluster's shared state) cannot be reached: retryable, nothing was consumed. */
  cluster_unavailable: {
    message: "The gateway cluster's shared state (Redis) cannot be reached right now; nothing was consumed: retry the same request in a few seconds",
    status: 200,
  },
  cancelled: { message: 'The request was cancelled', status: 200 },
} as const satisfies Record<string, { message: string; status: number }>;

export type GatewayErrorCode = keyof typeof LOCAL_ERRORS;

/** The HTTP status for a local failure reason (undefined for other reasons). */
export function httpStatusOfReason(reason: unknown): number | undefined {
  return typeof reason === 'string' && Object.hasOwn(LOCAL_ERRORS, reason) ? LOCAL_ERRORS[reason as GatewayErrorCode].status : undefined;
}

/** A local failure. Its message may name a backend, never a payload or secret. */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly detail: string | undefined;
  constructor(code: GatewayErrorCode, detail?: string, options?: { cause?: unknown }) {
    const base = LOCAL_ERRORS[code].message;
    super(detail ? `${base}: ${detail}` : base, options);
    this.name = 'GatewayError';
    this.code = code;
    this.detail = detail;
  }
}

function hasNumericCode(e: unknown): e is { code: number; message: string; data?: unknown } {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'number' && typeof (e as { message?: unknown }).message === 'string';
}

/** v1 McpError prefixes its message with "MCP error <code>: "; the wire carries the bare text. */
export function bareMessage(message: string): string {
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
