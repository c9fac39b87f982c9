/**
 * A legacy session's plain `tools/call`, served beside the session's SDK server and answered as JSON
 * when it ends before anything must be streamed: most calls, and a 2025 server may answer any POST with
 * `application/json` (2025-11-25 basic/transports.mdx). The SDK's per-POST SSE stream, its priming
 * event, the event store's copy and the SDK's zod passes over the envelope, the params and the result
 * buy such a call nothing (issue 30: most of the legacy route's CPU per call). A call that must stream
 * something first (an input request to the client, a progress notification, a log line) or is still
 * running after `jsonAnswerMs` (1 s) moves to a stream of the SDK transport's own kind
 * (./answer-stream.ts: a resumption id, keep-alives, every message stored for a client that resumes),
 * and from then on is streamed as the SDK server streams its own requests' messages: its input requests
 * go out through the SDK server's senders, related to it, and come back through the SDK server.
 *
 * Only a plainly valid request is served here; anything else (a batch, an unknown key, a wrong type, a
 * `_meta` key of the protocol's own, a protocol version the session does not speak) goes to the SDK as
 * before, which keeps every refusal its own. The call goes through the same dispatcher and
 * ./session-server.ts's `serveForwarded` as the SDK's handler; a result that is not plainly valid goes
 * through the SDK server's own check, which may refuse it as the SDK path does. The request is counted
 * and logged with the session's others (./session-requests.ts). Its client's `notifications/cancelled`
 * (which reaches the SDK server, and so the session's count) cancels it, and it then gets no answer, as
 * the SDK server sends none (a POST that streamed nothing yet ends empty at once; a stream stays open,
 * as the SDK leaves its own). The session's end cancels it too: a call not yet streamed is answered
 * with the `cancelled` error, a stream ends with the session, as the SDK's do.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { GatewayError, ProtocolError, WireCode, toWireError } from '../../errors.js';
import { LEGACY_SESSION_VERSIONS } from '../../protocol/rev-2026-07-28/envelope.js';
import { background } from '../../util/background.js';
import { Lifeline } from '../../util/lifeline.js';
import { openAnswerStream, streamingTransport, type AnswerStream, type StreamingTransport } from './answer-stream.js';
import { SESSION_ENDED } from './session-requests.js';
import { sendInput, serveForwarded, type ForwardedExchange, type SessionServerDeps } from './session-server.js';
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
  if (meta !== undefined && (!isPlainObject(meta) || protocolKeys(meta) || !plainToken(meta['progressToken']))) return undefined;
  return { id: id as string | number, params };
}

/** A progress token as the SDK's schema takes it (a string or an integer), or none. */
function plainToken(token: unknown): boolean {
  return token === undefined || typeof token === 'string' || Number.isSafeInteger(token);
}

/** Whether the POST's headers are ones the SDK's transport takes as they are (its refusals stay its own). */
function plainHeaders(req: Request): boolean {
  const accept = req.headers.get('accept') ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  const version = req.headers.get('mcp-protocol-version');
  return version === null || LEGACY_SESSION_VERSIONS.includes(version);
}

/** How long a call may take to be answered as JSON, by default (ms): past it, its answer is streamed. */
export const JSON_ANSWER_MS = 1_000;

/** The SDK server's check of a `tools/call` result for the session's protocol version (its 2025 wire schema). */
type ResultCheck = (method: 'tools/call', result: unknown) => { ok: true; value: unknown } | { ok: false; reason: string; message?: string };

/** The session server's result check, as the SDK server runs it (`_wrapHandler`), or undefined if it moved. */
function resultCheckOf(server: Session['server']): ResultCheck | undefined {
  const codec = (server as unknown as { _negotiatedWireCodec?: () => { validateResult?: ResultCheck } })._negotiatedWireCodec?.();
  return typeof codec?.validateResult === 'function' ? codec.validateResult.bind(codec) : undefined;
}

/**
 * Serves `body` (a POST of the open streamable HTTP session `session`) here when it is a call this
 * module answers; undefined to let the session's SDK transport serve it. `jsonAnswerMs`: how long the
 * call may take to be answered as JSON before its answer moves to a stream (./answer-stream.ts).
 */
export function directCall(
  session: Session,
  req: Request,
  body: unknown,
  deps: SessionServerDeps,
  jsonAnswerMs = JSON_ANSWER_MS,
): Promise<Response> | undefined {
  if (req.method !== 'POST' || !session.server.getCapabilities()['tools']) return undefined;
  const call = plainCall(body);
  if (!call || !plainHeaders(req)) return undefined;
  const transport = streamingTransport(session.wire.transport);
  const check = resultCheckOf(session.server);
  if (!transport || !check) return undefined;
  const version = req.headers.get('mcp-protocol-version') ?? session.server.getNegotiatedProtocolVersion() ?? LEGACY_SESSION_VERSIONS[0]!;
  return serve({ session, call, message: body as JSONRPCMessage, req, deps, transport, check, version }, jsonAnswerMs);
}

interface DirectCall {
  readonly session: Session;
  readonly call: PlainCall;
  readonly message: JSONRPCMessage;
  readonly req: Request;
  readonly deps: SessionServerDeps;
  readonly transport: StreamingTransport;
  readonly check: ResultCheck;
  readonly version: string;
}

/**
 * The answer as JSON if the call ends before anything must be streamed and within `jsonAnswerMs`;
 * else on a stream, opened at the first input request or notification, or when the time is up. None
 * for a call its client cancelled.
 */
function serve(d: DirectCall, jsonAnswerMs: number): Promise<Response> {
  const { session } = d;
  const life = new Lifeline();
  let byClient = false;
  let respond!: (response: Response) => void;
  const response = new Promise<Response>((resolve) => (respond = resolve));
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** The call's stream once something opened it (undefined inside: it could not be opened, the session closed). */
  let stream: Promise<AnswerStream | undefined> | undefined;
  /** Its POST is answered, or will never be: nothing opens a stream any more. */
  let settled = false;
  const cancel = (why: string): void => {
    byClient = why !== SESSION_ENDED;
    life.abort(new GatewayError('cancelled', why));
    if (byClient && !stream) {
      // Cancelled before anything was streamed: its POST ends now, empty (a cancelled request gets no answer).
      settled = true;
      clearTimeout(timer);
      respond(jsonResponse(undefined, session.id));
    }
  };
  session.requests.received(d.message, cancel);
  const open = (): Promise<AnswerStream | undefined> => {
    if (settled) return Promise.resolve(undefined);
    if (!stream) {
      clearTimeout(timer);
      stream = openAnswerStream(d.transport, d.call.id, session.id, d.version).then(
        (s) => (respond(s.response), s),
        () => undefined,
      );
    }
    return stream;
  };
  timer = setTimeout(() => background('move a legacy call to a stream', open(), d.deps.logger), jsonAnswerMs);
  timer.unref();
  // A cancelled request gets no answer (2025-11-25 cancellation).
  const answered = answer(d, life, open).then((a) => (life.aborted && byClient ? undefined : a));
  const sent = (a: JSONRPCMessage | undefined): void => {
    if (a) session.requests.sent(a, cancel);
  };
  const delivered = answered.then(async (a) => {
    clearTimeout(timer);
    settled = true;
    const s = await stream;
    try {
      if (s)
        await s.deliver(a); // fails only when the transport closed meanwhile (logged)
      else respond(jsonResponse(a, session.id)); // never moved, or the stream could not be opened
    } finally {
      sent(a);
    }
  });
  background('answer a legacy call', delivered, d.deps.logger);
  return response;
}

/** Runs the call; its answer (a result, or the error the SDK server would send). Never rejects. */
async function answer(d: DirectCall, life: Lifeline, open: () => Promise<AnswerStream | undefined>): Promise<JSONRPCMessage> {
  const { call, session, deps } = d;
  const related = { relatedRequestId: call.id };
  const leg = { ...related, timeout: deps.inputTimeoutMs, resetTimeoutOnProgress: true, maxTotalTimeout: deps.inputTimeoutMs };
  const exchange: ForwardedExchange = {
    id: call.id,
    get signal() {
      return life.signal;
    },
    end: life,
    // Made only when read: a pure wait (`await_activity`) ends when the client's connection does.
    get connection() {
      return d.req.signal;
    },
    // On the call's stream, opened for it, in the order they come (as the SDK server relates them).
    notify: (n) =>
      background(
        'relay a notification to a legacy client',
        open().then((s) => s && session.server.notification(n, related)),
        deps.logger,
      ),
    send: async (method, params, signal) => {
      if (!(await open())) throw new ProtocolError(WireCode.InternalError, 'The session closed before its client could be asked');
      return sendInput(session.server, method, params, { ...leg, signal });
    },
  };
  try {
    const result = checkedResult(await serveForwarded('tools/call', call.params, exchange, session.server, session, deps), d.check);
    return (life.aborted ? errorAnswer(call.id, life.reason) : { jsonrpc: '2.0', id: call.id, result }) as JSONRPCMessage;
  } catch (e) {
    return errorAnswer(call.id, life.aborted ? life.reason : e) as JSONRPCMessage;
  }
}

/** The answer as JSON; none (a cancelled call) as an event stream that ends at once, with no message on it. */
function jsonResponse(answer: JSONRPCMessage | undefined, sessionId: string): Response {
  if (!answer) return new Response(null, { status: 200, headers: { 'content-type': 'text/event-stream', 'mcp-session-id': sessionId } });
  return new Response(JSON.stringify(answer), { status: 200, headers: { 'content-type': 'application/json', 'mcp-session-id': sessionId } });
}

/** The JSON-RPC error answer for `e`, as the SDK server writes a handler's throw. */
function errorAnswer(id: string | number, e: unknown): Record<string, unknown> {
  const { code, message, data } = e instanceof ProtocolError ? { code: e.code, message: e.message, data: e.data } : toWireError(e);
  // The SDK's 2025 codec writes the 2026-07-28 "resource not found" as the invalid params it was then.
  return { jsonrpc: '2.0', id, error: { code: code === -32002 ? WireCode.InvalidParams : code, message, ...(data !== undefined ? { data } : {}) } };
}

/** Keys that keep a result without `content` from being given an empty one (the SDK's list). */
const FOREIGN_FAMILY_KEYS = ['task', 'inputRequests', 'requestState'];

/**
 * A `tools/call` result as the SDK server lets it through: a plain one (text content, the optional
 * fields of their types) as it is; any other through the SDK server's own check, which may refuse it.
 */
function checkedResult(result: Record<string, unknown>, check: ResultCheck): Record<string, unknown> {
  if (plainResult(result)) return result;
  const normalized = result['content'] === undefined && !FOREIGN_FAMILY_KEYS.some((k) => k in result) ? { ...result, content: [] } : result;
  const checked = check('tools/call', normalized);
  if (checked.ok) return checked.value as Record<string, unknown>;
  if (checked.reason === 'not-in-era') throw new ProtocolError(WireCode.InternalError, 'No wire schema for tools/call in the resolved era');
  throw new ProtocolError(WireCode.InvalidParams, `Invalid tools/call result: ${checked.message ?? ''}`);
}

const RESULT_KEYS = new Set(['content', 'isError', 'structuredContent', '_meta']);
const TEXT_KEYS = new Set(['type', 'text']);

/** Text blocks, and `isError`, `structuredContent` and `_meta` of their types (no key of the protocol's own in `_meta`). */
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
    (_meta === undefined || (isPlainObject(_meta) && !protocolKeys(_meta)))
  );
}

/** Whether `meta` has a key of the protocol's own (`io.modelcontextprotocol/…`), which the SDK's schemas check. */
function protocolKeys(meta: Record<string, unknown>): boolean {
  for (const key in meta) if (key.startsWith('io.modelcontextprotocol/')) return true;
  return false;
}
