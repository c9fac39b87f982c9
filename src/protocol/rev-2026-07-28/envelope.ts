/**
 * Admission of a 2026-07-28 POST: era classification and `_meta` envelope checks by the SDK's
 * `classifyInboundRequest` (classify.ts: with a fast path for what it already found valid), then the checks it leaves to the server: the protocol version
 * (-32022, basic/versioning.mdx), the SEP-2243 `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name`
 * headers against the body (-32020, transports/streamable-http.mdx "Standard headers"), and `logLevel`.
 * Every rejection carries the HTTP status the spec fixes for it.
 */
import { LoggingLevelSchema } from '@modelcontextprotocol/core';
import type { LoggingLevel } from '@modelcontextprotocol/server';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server';
import { WireCode, type WireErrorObject } from '../../errors.js';
import { classify } from './classify.js';

export const MODERN_VERSION = '2026-07-28';
/** Versions this endpoint serves statelessly (the `supported` list of -32022, and `server/discover`). */
export const SUPPORTED_VERSIONS: readonly string[] = [MODERN_VERSION];
/** Versions the legacy client route serves on the same endpoint, as sessions opened with `initialize`. */
export const LEGACY_SESSION_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

/** The per-request and per-result `_meta` keys of 2026-07-28, as the SDK names them. */
export const META = {
  protocolVersion: PROTOCOL_VERSION_META_KEY,
  clientCapabilities: CLIENT_CAPABILITIES_META_KEY,
  clientInfo: CLIENT_INFO_META_KEY,
  logLevel: LOG_LEVEL_META_KEY,
  serverInfo: SERVER_INFO_META_KEY,
} as const;

export type LogLevel = LoggingLevel;

export type RequestId = string | number;

/** One `Mcp-Param-*` header by its name lower-cased without the prefix (read from the request only when asked). */
export type ParamHeaderLookup = (name: string) => string | undefined;
const noParamHeaders: ParamHeaderLookup = () => undefined;

/** An admitted front request. */
export interface FrontRequest {
  readonly id: RequestId;
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly capabilities: Record<string, unknown>;
  readonly clientInfo?: { name?: unknown; version?: unknown } | undefined;
  readonly logLevel?: LogLevel | undefined;
  readonly progressToken?: string | number | undefined;
  /** An `Mcp-Param-*` header (SEP-2243 custom headers) by its name lower-cased without the prefix. */
  readonly paramHeader: ParamHeaderLookup;
}

export interface InboundHttp {
  readonly httpMethod: string;
  readonly protocolVersionHeader: string | undefined;
  readonly mcpMethodHeader: string | undefined;
  readonly mcpNameHeader: string | undefined;
  /** Looked up only for a tool whose schema mirrors an argument into one (none: no such header). */
  readonly paramHeader?: ParamHeaderLookup;
  readonly body: unknown;
  /** Whether this endpoint also serves 2025-era sessions (the Node gateway's `/mcp`; not the edge): what a 2025-era request is told. Default true. */
  readonly servesSessions?: boolean;
}

export type Admission =
  | { kind: 'request'; request: FrontRequest }
  | { kind: 'notification'; method: string }
  | { kind: 'reject'; status: number; id: RequestId | null; error: WireErrorObject };

/** The param that `Mcp-Name` mirrors, per method. */
const NAME_PARAM: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** Decodes the SEP-2243 `=?base64?…?=` form; plain values pass through. Undefined when malformed. */
export function decodeHeaderValue(value: string): string | undefined {
  if (!/^[\x20-\x7E]*$/.test(value)) return undefined; // only visible ASCII and spaces on the wire
  const trimmed = value.trim();
  const m = /^=\?base64\?(.*)\?=$/.exec(trimmed);
  if (!m) return trimmed;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(m[1]!) || m[1]!.length % 4 !== 0) return undefined;
  try {
    const bin = atob(m[1]!);
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function idOf(body: unknown): RequestId | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function reject(status: number, body: unknown, code: number, message: string, data?: unknown): Admission {
  const error: WireErrorObject = { code, message };
  if (data !== undefined) error.data = data;
  return { kind: 'reject', status, id: idOf(body), error };
}

/** Admits or rejects one POST body. Never throws. */
export function admit(http: InboundHttp): Admission {
  const { body } = http;
  const classified = classify({
    httpMethod: http.httpMethod,
    body,
    ...(http.protocolVersionHeader !== undefined ? { protocolVersionHeader: http.protocolVersionHeader } : {}),
    ...(http.mcpMethodHeader !== undefined ? { mcpMethodHeader: http.mcpMethodHeader } : {}),
    ...(http.mcpNameHeader !== undefined ? { mcpNameHeader: http.mcpNameHeader } : {}),
  });
  if (classified.kind === 'reject') return reject(classified.httpStatus, body, classified.code, classified.message, classified.data);
  if (classified.kind === 'legacy') {
    const requested = classified.requestedVersion ?? 'unknown';
    if (http.servesSessions === false) {
      return reject(
        400,
        body,
        WireCode.UnsupportedProtocolVersion,
        `Unsupported protocol version: a ${classified.requestedVersion ?? '2025-era'} request (initialize, a session): this endpoint serves MCP 2026-07-28 only (per-request _meta, no initialize)`,
        { supported: [...SUPPORTED_VERSIONS], requested },
      );
    }
    return reject(
      400,
      body,
      WireCode.UnsupportedProtocolVersion,
      `Unsupported protocol version: a ${classified.requestedVersion ?? '2025-era'} request needs a session here: open one with initialize (served as sessions: ${LEGACY_SESSION_VERSIONS.join(', ')}), or send MCP 2026-07-28 requests (per-request _meta, no initialize)`,
      { supported: [...SUPPORTED_VERSIONS, ...LEGACY_SESSION_VERSIONS], requested },
    );
  }
  if (classified.messageKind === 'notification') return { kind: 'notification', method: classified.message.method };
  const message = classified.message;
  const params = (message.params ?? {}) as Record<string, unknown>;
  const meta = (params['_meta'] ?? {}) as Record<string, unknown>;
  const version = meta[META.protocolVersion];

  if (http.protocolVersionHeader === undefined) {
    return reject(400, body, WireCode.HeaderMismatch, 'Header mismatch: the MCP-Protocol-Version header is required');
  }
  if (typeof version !== 'string' || !SUPPORTED_VERSIONS.includes(version)) {
    return reject(400, body, WireCode.UnsupportedProtocolVersion, `Unsupported protocol version: ${String(version)}`, {
      supported: [...SUPPORTED_VERSIONS],
      requested: String(version),
    });
  }
  if (http.mcpMethodHeader === undefined) return reject(400, body, WireCode.HeaderMismatch, 'Header mismatch: the Mcp-Method header is required');
  if (http.mcpMethodHeader !== message.method) {
    return reject(400, body, WireCode.HeaderMismatch, 'Header mismatch: Mcp-Method does not match the request method');
  }
  const nameParam = Object.hasOwn(NAME_PARAM, message.method) ? NAME_PARAM[message.method] : undefined;
  if (nameParam !== undefined) {
    const bodyValue = params[nameParam];
    if (http.mcpNameHeader === undefined) return reject(400, body, WireCode.HeaderMismatch, 'Header mismatch: the Mcp-Name header is required');
    const decoded = decodeHeaderValue(http.mcpNameHeader);
    if (decoded === undefined || typeof bodyValue !== 'string' || decoded !== bodyValue) {
      return reject(400, body, WireCode.HeaderMismatch, `Header mismatch: Mcp-Name does not match params.${nameParam}`);
    }
  }
  const logLevel = meta[META.logLevel];
  if (logLevel !== undefined && !LoggingLevelSchema.safeParse(logLevel).success)
    return reject(400, body, WireCode.InvalidParams, 'Invalid params: unknown logLevel');
  const caps = meta[META.clientCapabilities];
  const progressToken = meta['progressToken'];
  return {
    kind: 'request',
    request: {
      id: message.id,
      method: message.method,
      params,
      capabilities: caps && typeof caps === 'object' ? (caps as Record<string, unknown>) : {},
      clientInfo: meta[META.clientInfo] as FrontRequest['clientInfo'],
      logLevel: logLevel as LogLevel | undefined,
      progressToken: typeof progressToken === 'string' || typeof progressToken === 'number' ? progressToken : undefined,
      paramHeader: http.paramHeader ?? noParamHeaders,
    },
  };
}
