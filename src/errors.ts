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
  /** A bound refuses one more (a session, a stream, a wait): `data.reason` says whose bound (HTTP 429 or 503). */
  LimitReached: -32000,
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
  backend_unavailable: { message: 'The backend server is unavailable (down, restarting or not answering); retry later', status: 200 },
  backend_closed: { message: 'The backend connection closed before the call finished', status: 200 },
  backend_timeout: { message: 'The backend did not answer in time', status: 200 },
  backend_request_expired: {
    message:
      'The backend stopped waiting for the answer: its own request timed out (servers built on the v1 SDK give up after 60 s); start the request again and answer sooner',
    status: 200,
  },
  parked_call_limit: { message: 'Too many calls are waiting for input; answer or abandon some first', status: 200 },
  task_limit: { message: 'Too many tasks are open for this principal; wait for some to finish or cancel them', status: 200 },
  task_expired: { message: 'The task ran past its ttlMs and was cancelled', status: 200 },
  gateway_closing: { message: 'The gateway is shutting down', status: 200 },
  gateway_draining: { message: 'The gateway is shutting down and takes no new requests; retry on another instance', status: 503 },
  pool_exhausted: { message: 'No backend session became free in time', status: 200 },
  call_reclaimed: {
    message:
      "The call waited for its client's answer longer than gateway.reclaimParkedAfterMs while other calls waited for its backend session, and was cancelled to free it; start it again",
    status: 200,
  },
  input_timeout: {
    message:
      "Nobody answered the backend's request for input within its server's parkTimeoutMs; the call was ended on the backend to free its session; start it again",
    status: 200,
  },
  /** Redis (the cluster's shared state) cannot be reached: retryable, nothing was consumed. */
  cluster_unavailable: {
    message: "The gateway cluster's shared state (Redis) cannot be reached right now; nothing was consumed: retry the same request in a few seconds",
    status: 200,
  },
  cancelled: { message: 'The request was cancelled', status: 200 },
  /**
   * The access token could not be checked (the authorization server's keys or its introspection
   * endpoint cannot be reached): not found invalid, so a client retries it rather than getting another.
   */
  authorization_unavailable: {
    message: 'The access token cannot be checked now: the authorization server cannot be reached; retry the same request in a few seconds',
    status: 503,
  },
  /**
   * The instance that holds a task (or call) is not known gone but did not take the request: its state
   * cannot be told now. Retry: once its heartbeat has lapsed (12 s by default) a task it ran is failed.
   */
  instance_unreachable: {
    message: 'The gateway instance that holds this cannot be reached right now; retry in a few seconds (if it stopped, what it held is then reported failed)',
    status: 200,
  },
  /** Another instance served a forwarded request, and its answer was cut on the way back. */
  forward_cut: { message: 'The gateway instance that served this request cut its answer on the way back; it may have run', status: 200 },
  // Fair shares (limitError below): the caller's own bound is full (free one of yours), or everyone's is (retry soon).
  principal_limit: { message: 'This principal holds as many as it may', status: 429 },
  total_limit: { message: 'The gateway holds as many as it may for everyone; retry shortly', status: 503 },
  // Rate limits (gateway.rateLimits; rateLimitedError below): the caller's budget is spent for now.
  rate_limited: { message: 'This principal is over its rate limit; retry after the time given', status: 429 },
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

/**
 * An error that carries a JSON-RPC code (a peer's, the SDK's, ours): an integer `code` and a message.
 * Never a DOMException, whose `code` is a legacy DOM number (20 for an AbortError, 23 for the
 * TimeoutError of `AbortSignal.timeout`), not one a client could read.
 */
export function carriesWireCode(e: unknown): e is { code: number; message: string; data?: unknown } {
  return (
    typeof e === 'object' &&
    e !== null &&
    !(e instanceof DOMException) &&
    Number.isInteger((e as { code?: unknown }).code) &&
    typeof (e as { message?: unknown }).message === 'string'
  );
}

/**
 * v1 McpError prefixes its message with "MCP error <code>: "; the wire carries the bare text. A v1
 * server's error already carries one on the wire, and the v1 client adds another: every one goes, so a
 * client's own SDK adds exactly one.
 */
export function bareMessage(message: string): string {
  return message.replace(/^(?:MCP error -?\d+: )+/, '');
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
  if (carriesWireCode(e)) {
    const out: WireErrorObject = { code: e.code, message: bareMessage(e.message) };
    if (e.data !== undefined) out.data = e.data;
    return out;
  }
  return { code: WireCode.InternalError, message: 'Internal error' };
}

/** Which bound refused, for `limitError`. */
export interface LimitRefusal {
  /** `principal`: the caller's own share is full; `total`: everyone's is. */
  readonly whose: 'principal' | 'total';
  /** The config key of the bound (e.g. `gateway.maxLegacySessionsPerPrincipal`). */
  readonly limit: string;
  readonly max: number;
  /** What is bounded, plural (`legacy sessions`, `subscriptions/listen streams`). */
  readonly what: string;
  /** How the caller frees one of its own (for a `principal` refusal). */
  readonly free: string;
}

/**
 * A fair-share refusal: -32000 with `data.reason` `principal_limit` (HTTP 429: this principal must free
 * one of its own; retrying does not help until it does) or `total_limit` (HTTP 503 + Retry-After: the
 * gateway is full for everyone), `data.limit` (the config key), `data.max`, and for the former `data.free`.
 */
export function limitError(r: LimitRefusal): ProtocolError {
  if (r.whose === 'total') {
    return new ProtocolError(WireCode.LimitReached, `Too many ${r.what} are open on this gateway (${r.limit} = ${r.max}); retry shortly`, {
      reason: 'total_limit',
      limit: r.limit,
      max: r.max,
    });
  }
  return new ProtocolError(WireCode.LimitReached, `This principal already holds ${r.max} ${r.what} (${r.limit}): ${r.free}`, {
    reason: 'principal_limit',
    limit: r.limit,
    max: r.max,
    free: r.free,
  });
}

/** Which rate limit refused, for `rateLimitedError`. */
export interface RateRefusal {
  /** The config key of the limit (e.g. `gateway.rateLimits.requestsPerMinute`). */
  readonly limit: string;
  /** When a retry may succeed, in ms (a hint: for the concurrency bound, when one of the caller's calls might have ended). */
  readonly retryAfterMs: number;
  /** What is limited, for the message (`requests`, `calls to search`, `concurrent calls`). */
  readonly what: string;
  /** The backend, for a per-server limit. */
  readonly server?: string | undefined;
}

/**
 * A rate-limit refusal (gateway.rateLimits): -32000 with `data.reason` `rate_limited` (HTTP 429 with
 * `Retry-After` when it is the answer to a plain request; http/status.ts), `data.limit` (the config
 * key), `data.retryAfterMs`, and `data.server` for a per-server bucket.
 */
export function rateLimitedError(r: RateRefusal): ProtocolError {
  const seconds = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
  return new ProtocolError(WireCode.LimitReached, `Rate limit reached: too many ${r.what} for this principal (${r.limit}); retry in ${seconds} s`, {
    reason: 'rate_limited',
    limit: r.limit,
    retryAfterMs: Math.max(0, Math.ceil(r.retryAfterMs)),
    ...(r.server !== undefined ? { server: r.server } : {}),
  });
}

/** Why a call continued by a requestState cannot be found (the lead of `request_state_gone` messages). */
const CALL_GONE = 'The call this requestState continues no longer exists';
/** The lead of `request_state_stale` messages. */
const STALE = 'Stale requestState: this round was already answered';

/**
 * Every way a requestState can be refused: -32602 with a stable message and `data.reason`
 * `request_state_<reason>` (the state itself: `malformed` … `request`; the call behind it: `gone`,
 * `stale`, `instance`).
 */
const REQUEST_STATE_ERRORS = {
  malformed: 'Invalid requestState: it is not a state this gateway issued. Start the request again without requestState.',
  invalid: 'Invalid requestState: it failed verification. Start the request again without requestState.',
  expired: 'Expired requestState: start the request again without requestState.',
  principal: 'Invalid requestState: it was issued to another principal.',
  request: 'Invalid requestState: it was issued for a different request (method or params differ).',
  gone: `${CALL_GONE} (it expired, was cancelled, or the gateway instance that held it restarted or stopped). Start the request again without requestState.`,
  stale: `${STALE}. Use the requestState of the latest input_required result.`,
  instance:
    'The call this requestState continues is held by another gateway instance, and this request could not be passed to it (it is unreachable, or forwarding between instances is not configured). If it stopped, its calls are reported gone once its heartbeat lapses.',
} as const satisfies Record<string, string>;

export type RequestStateRefusal = keyof typeof REQUEST_STATE_ERRORS;

/** Every `request_state_<reason>` reason, without its prefix (the metric's label values). */
export const REQUEST_STATE_REFUSALS = Object.keys(REQUEST_STATE_ERRORS) as readonly RequestStateRefusal[];

/** A requestState refusal as it goes on the wire; a `gone` call may say why it ended, a `stale` one what became of the call. */
export function requestStateError(reason: RequestStateRefusal, why?: string): ProtocolError {
  const message =
    reason === 'gone' && why
      ? `${CALL_GONE}: ${why}. Start the request again without requestState.`
      : reason === 'stale' && why
        ? `${STALE}, and ${why}.`
        : REQUEST_STATE_ERRORS[reason];
  return invalidParams(message, { reason: `request_state_${reason}` });
}

/** Reasons of -32602 refusals the gateway gives besides the requestState ones. */
const PARAM_REASONS = new Set(['forbidden']);

/** True for a `data.reason` the gateway itself gives (a local failure kind, `request_state_<reason>`): a bounded set. */
export function isGatewayReason(reason: unknown): reason is string {
  if (typeof reason !== 'string') return false;
  if (Object.hasOwn(LOCAL_ERRORS, reason) || PARAM_REASONS.has(reason)) return true;
  return reason.startsWith('request_state_') && Object.hasOwn(REQUEST_STATE_ERRORS, reason.slice('request_state_'.length));
}

/**
 * A refusal by `gateway.policy`: -32602 with `data.reason: "forbidden"`, naming what was refused and
 * where the rule is (core/access-policy.ts), never who else may use it.
 */
export function forbiddenError(what: 'tool' | 'prompt' | 'resource' | 'server', name: string, server: string): ProtocolError {
  const named = what === 'server' ? `server "${server}"` : `${what} "${name}" of server "${server}"`;
  return invalidParams(`Forbidden: ${named} is not allowed to this caller by the gateway's policy (gateway.policy)`, { reason: 'forbidden' });
}

/** `data` of a -32602 for answers (`inputResponses`) that are malformed or do not fit what was asked: send them again, corrected, with the same requestState. */
export const INPUT_RESPONSES_INVALID = { reason: 'input_responses_invalid' } as const;

/** Shorthand for a -32602 ProtocolError. */
export function invalidParams(message: string, data?: unknown): ProtocolError {
  return new ProtocolError(WireCode.InvalidParams, message, data);
}

/** A JSON-RPC error answer (negative integer code), as opposed to a transport failure (e.g. HTTP 404). */
export function isJsonRpcError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'number' && Number.isInteger(code) && code < 0;
}

/** True for the local error that says the cluster's shared state (Redis) cannot be reached right now. */
export function isClusterUnavailable(e: unknown): boolean {
  return e instanceof GatewayError && e.code === 'cluster_unavailable';
}
