/**
 * One JSON-RPC request to a 2026-07-28 backend over streamable HTTP, outside the SDK client, for the
 * tasks extension and `subscriptions/listen` (followed for an edge handler's listen stream): the SDK v2 client (2.4.0) rejects a `resultType: "task"` answer before any hook
 * can see it (`UNSUPPORTED_RESULT_TYPE`), and has no `tasks/update`. Everything else goes through the
 * SDK client. The request carries the standard headers (`MCP-Protocol-Version`, `Mcp-Method`,
 * `Mcp-Name`) and the per-request `_meta`; the answer is JSON or an SSE stream (parsed with
 * `eventsource-parser`), whose progress notifications are handed on and whose response is returned.
 * A JSON-RPC error is thrown as a `ProtocolError`; a transport failure as `backend_unavailable`.
 */
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/client';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { GatewayError, ProtocolError } from '../../errors.js';
import { exchangeFailure } from './exchange-failure.js';

/** The extension's id (core keeps its own copy: it imports no protocol revision, and the SDK does not name it yet). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const PROTOCOL_VERSION = '2026-07-28';

export interface TaskLegRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly capabilities: Record<string, unknown>;
  readonly clientInfo: { name: string; version: string };
  readonly signal: AbortSignal;
  readonly onprogress?: ((params: Record<string, unknown>) => void) | undefined;
  /** Every other notification of the answer's stream, as it arrives. */
  readonly onnotification?: ((message: Record<string, unknown>) => void) | undefined;
  /** The fetch to send with (the backend's credentials added; default: global fetch). */
  readonly fetch?: ((input: string | URL, init?: RequestInit) => Promise<Response>) | undefined;
}

let nextId = 1;

/** The value `Mcp-Name` mirrors for `method` (SEP-2243; tasks extension). */
function nameOf(method: string, params: Record<string, unknown>): string | undefined {
  const v = method === 'tools/call' ? params['name'] : method.startsWith('tasks/') ? params['taskId'] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** Sends one request; resolves with its result. */
export async function sendTaskLeg(req: TaskLegRequest): Promise<Record<string, unknown>> {
  const id = nextId++;
  const meta = { ...((req.params['_meta'] as Record<string, unknown> | undefined) ?? {}) };
  meta[PROTOCOL_VERSION_META_KEY] = PROTOCOL_VERSION;
  meta[CLIENT_CAPABILITIES_META_KEY] = req.capabilities;
  meta[CLIENT_INFO_META_KEY] = req.clientInfo;
  const name = nameOf(req.method, req.params);
  let res: Response;
  try {
    res = await (req.fetch ?? fetch)(req.url, {
      method: 'POST',
      signal: req.signal,
      headers: {
        ...req.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': PROTOCOL_VERSION,
        'mcp-method': req.method,
        ...(name !== undefined ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: req.method, params: { ...req.params, _meta: meta } }),
    });
  } catch (e) {
    if (req.signal.aborted) throw e;
    throw exchangeFailure(`${req.method}: ${(e as Error).message}`, req.method, e);
  }
  const type = res.headers.get('content-type') ?? '';
  let message: Record<string, unknown> | undefined;
  if (type.includes('text/event-stream') && res.body) {
    const reader = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
    try {
      for (;;) {
        const { value: event, done } = await reader.read();
        if (done) break;
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(event.data) as Record<string, unknown>;
        } catch {
          continue;
        }
        if (msg['method'] === 'notifications/progress' && msg['params']) req.onprogress?.(msg['params'] as Record<string, unknown>);
        else if (typeof msg['method'] === 'string' && msg['id'] === undefined) req.onnotification?.(msg);
        if (msg['id'] === id && (msg['result'] !== undefined || msg['error'] !== undefined)) {
          message = msg;
          break;
        }
      }
    } catch (e) {
      if (req.signal.aborted) throw e;
      throw exchangeFailure(`${req.method}: ${(e as Error).message}`, req.method, e);
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  } else if (type.includes('application/json')) {
    message = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  } else {
    await res.body?.cancel().catch(() => undefined);
  }
  if (!message) throw new GatewayError('backend_unavailable', `${req.method}: HTTP ${res.status} without a JSON-RPC answer`);
  const error = message['error'] as { code?: unknown; message?: unknown; data?: unknown } | undefined;
  if (error) {
    throw new ProtocolError(
      typeof error.code === 'number' ? error.code : -32603,
      typeof error.message === 'string' ? error.message : 'Backend error',
      error.data,
    );
  }
  const result = message['result'];
  if (!result || typeof result !== 'object' || Array.isArray(result)) throw new GatewayError('backend_unavailable', `${req.method}: malformed result`);
  return result as Record<string, unknown>;
}

/** True when `capabilities` declare the tasks extension. */
export function declaresTasksExtension(capabilities: Record<string, unknown>): boolean {
  const ext = capabilities['extensions'];
  return ext !== null && typeof ext === 'object' && !Array.isArray(ext) && Object.hasOwn(ext, TASKS_EXTENSION);
}
