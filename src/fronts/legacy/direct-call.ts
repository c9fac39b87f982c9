/**
 * A legacy session's `tools/call` answered as JSON beside the session's SDK server, when nothing can
 * be streamed to its client before the answer: the client declared no elicitation, sampling or roots
 * (no input request can be sent on the call's behalf), did not ask for log lines (`logging/setLevel`)
 * and gave no progress token. Such a call's POST has nothing to resume, so the SDK's per-POST SSE
 * stream, its priming event, the event store's copy and the SDK's zod passes over the envelope, the
 * params and the result buy it nothing (issue 30: a third of the legacy route's CPU per call). A 2025
 * server may answer any POST with `application/json` (2025-11-25 basic/transports.mdx).
 *
 * Only a plainly valid request is served here; anything else (a batch, an unknown key, a wrong type, a
 * protocol version the session does not speak) goes to the SDK as before, which keeps every refusal
 * its own. The call itself goes through the same dispatcher and ./session-server.ts's
 * `serveForwarded` as the SDK's handler; a result that is not plainly valid is checked with the SDK's
 * `CallToolResultSchema` as the SDK server checks it. The request is counted and logged with the
 * session's others (./session-requests.ts), and cancelled when its client cancels it
 * (`notifications/cancelled`, which reaches the SDK server and so the session's count) or the session
 * ends: then its answer is the `cancelled` error, which the client, having given up on it, ignores.
 */
import { CallToolResultSchema } from '@modelcontextprotocol/core';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { GatewayError, ProtocolError, WireCode, toWireError } from '../../errors.js';
import { inputCapabilitiesOf } from '../../core/input-capabilities.js';
import { LEGACY_SESSION_VERSIONS } from '../../protocol/rev-2026-07-28/envelope.js';
import { withoutTasksExtension } from '../../protocol/rev-2026-07-28/tasks.js';
import { Lifeline } from '../../util/lifeline.js';
import { serveForwarded, type ForwardedExchange, type SessionServerDeps } from './session-server.js';
import type { Session } from './session.js';

/** The request, when it is a plainly valid `tools/call` that this module may answer. */
interface PlainCall {
  readonly id: string | number;
  readonly params: Record<string, unknown>;
}

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const PARAM_KEYS = new Set(['name', 'arguments', '_meta']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function onlyKeys(value: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}

/** `body` as a plain `tools/call` with no progress token, or undefined (the SDK decides anything else). */
function plainCall(body: unknown): PlainCall | undefined {
  if (!isPlainObject(body) || !onlyKeys(body, REQUEST_KEYS) || body['jsonrpc'] !== '2.0' || body['method'] !== 'tools/call') return undefined;
  const id = body['id'];
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  const params = body['params'];
  if (!isPlainObject(params) || !onlyKeys(params, PARAM_KEYS) || typeof params['name'] !== 'string') return undefined;
  if (params['arguments'] !== undefined && !isPlainObject(params['arguments'])) return undefined;
  const meta = params['_meta'];
  if (meta !== undefined && (!isPlainObject(meta) || 'progressToken' in meta)) return undefined;
  return { id: id as string | number, params };
}

/** Whether the POST's headers are ones the SDK's transport takes as they are (its refusals stay its own). */
function plainHeaders(req: Request): boolean {
  const accept = req.headers.get('accept') ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  const version = req.headers.get('mcp-protocol-version');
  return version === null || LEGACY_SESSION_VERSIONS.includes(version);
}

/** Whether nothing can be streamed to the session's client before an answer (see the header). */
function nothingToStream(session: Session): boolean {
  if (session.logLevel !== undefined) return false;
  const caps = withoutTasksExtension((session.server.getClientCapabilities() ?? {}) as Record<string, unknown>);
  const input = inputCapabilitiesOf(caps);
  return !input.elicitation && !input.sampling && !input.roots;
}

/**
 * Serves `body` (a POST of the open streamable HTTP session `session`) here when it is a call this
 * module answers; undefined to let the session's SDK transport serve it.
 */
export function directCall(session: Session, req: Request, body: unknown, deps: SessionServerDeps): Promise<Response> | undefined {
  if (req.method !== 'POST' || !session.server.getCapabilities()['tools']) return undefined;
  const call = plainCall(body);
  if (!call || !plainHeaders(req) || !nothingToStream(session)) return undefined;
  return serve(session, call, body as JSONRPCMessage, req, deps);
}

async function serve(session: Session, call: PlainCall, message: JSONRPCMessage, req: Request, deps: SessionServerDeps): Promise<Response> {
  const life = new Lifeline();
  session.requests.received(message, (why) => life.abort(new GatewayError('cancelled', why)));
  const exchange: ForwardedExchange = {
    id: call.id,
    get signal() {
      return life.signal;
    },
    end: life,
    // Made only when read: a pure wait (`await_activity`) ends when the client's connection does.
    get connection() {
      return req.signal;
    },
    send: (method) => Promise.reject(new ProtocolError(WireCode.InternalError, `Cannot send ${method}: the client declared no capability to be asked`)),
  };
  let answer: Record<string, unknown>;
  try {
    const result = checkedResult(await serveForwarded('tools/call', call.params, exchange, session.server, session, deps));
    answer = life.aborted ? errorAnswer(call.id, life.reason) : { jsonrpc: '2.0', id: call.id, result };
  } catch (e) {
    answer = errorAnswer(call.id, life.aborted ? life.reason : e);
  }
  session.requests.sent(answer as JSONRPCMessage);
  return new Response(JSON.stringify(answer), { status: 200, headers: { 'content-type': 'application/json', 'mcp-session-id': session.id } });
}

/** The JSON-RPC error answer for `e`, as the SDK server writes a handler's throw. */
function errorAnswer(id: string | number, e: unknown): Record<string, unknown> {
  const { code, message, data } = e instanceof ProtocolError ? { code: e.code, message: e.message, data: e.data } : toWireError(e);
  // The SDK's 2025 codec writes the 2026-07-28 "resource not found" as the invalid params it was then.
  return { jsonrpc: '2.0', id, error: { code: code === -32002 ? WireCode.InvalidParams : code, message, ...(data !== undefined ? { data } : {}) } };
}

/**
 * A `tools/call` result as the SDK server lets it through: a plain one (text content, the optional
 * fields of their types) as it is; any other checked with the SDK's schema, which may refuse it.
 */
function checkedResult(result: Record<string, unknown>): Record<string, unknown> {
  if (plainResult(result)) return result;
  const normalized = result['content'] === undefined && !('task' in result) ? { ...result, content: [] } : result;
  const parsed = CallToolResultSchema.safeParse(normalized);
  if (!parsed.success) throw new ProtocolError(WireCode.InvalidParams, `Invalid tools/call result: ${parsed.error.message}`);
  return parsed.data as Record<string, unknown>;
}

const RESULT_KEYS = new Set(['content', 'isError', 'structuredContent', '_meta']);
const TEXT_KEYS = new Set(['type', 'text']);

function plainResult(result: Record<string, unknown>): boolean {
  if (!onlyKeys(result, RESULT_KEYS)) return false;
  const content = result['content'];
  if (!Array.isArray(content)) return false;
  for (const item of content as unknown[]) {
    if (!isPlainObject(item) || !onlyKeys(item, TEXT_KEYS) || item['type'] !== 'text' || typeof item['text'] !== 'string') return false;
  }
  const { isError, structuredContent, _meta } = result;
  return (
    (isError === undefined || typeof isError === 'boolean') &&
    (structuredContent === undefined || isPlainObject(structuredContent)) &&
    (_meta === undefined || isPlainObject(_meta))
  );
}
