/**
 * Raw HTTP against the gateway, for wire shapes, plus strict assertions of our own on every message
 * the gateway sends (`@modelcontextprotocol/core` schemas are lenient, see ../shared/spec/sdk.md §2.2):
 * `resultType` on every result, `ttlMs`/`cacheScope` on discover/list/read, bare `{method, params}`
 * input requests of the three allowed kinds, serverInfo in `_meta`, JSON-RPC envelope exactness.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import * as z from 'zod/v4';
import {
  CallToolResultSchema,
  GetPromptResultSchema,
  ReadResourceResultSchema,
  ListToolsResultSchema,
  DiscoverResultSchema,
  ElicitRequestSchema,
  CreateMessageRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/core';
import { until } from './until.js';

export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPS = 'io.modelcontextprotocol/clientCapabilities';

export interface PostOptions {
  caps?: Record<string, unknown>;
  headers?: Record<string, string>;
  id?: number | string;
  meta?: Record<string, unknown>;
  signal?: AbortSignal;
  /** How to send it (default: global fetch over a socket; `inProcess(gateway)` skips the socket). */
  fetch?: (url: string | URL, init?: RequestInit) => Promise<Response>;
}

/** A fetch that hands requests straight to `gateway.fetch` (no socket), with the Host header a client would send. */
export function inProcess(gateway: { fetch(request: Request): Promise<Response> }): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    if (!headers.has('host')) headers.set('host', new URL(url).host);
    return gateway.fetch(new Request(url, { ...init, headers }));
  };
}

export interface WireReply {
  status: number;
  contentType: string;
  headers: Headers;
  /** The JSON-RPC response (last SSE message, or the JSON body). */
  message: Record<string, unknown>;
  /** Notifications that preceded it on an SSE stream. */
  notifications: Record<string, unknown>[];
}

let nextId = 1000;

export function nameHeaderFor(method: string, params: Record<string, unknown>): string | undefined {
  const v =
    method === 'resources/read'
      ? params['uri']
      : method === 'tools/call' || method === 'prompts/get'
        ? params['name']
        : method.startsWith('tasks/')
          ? params['taskId']
          : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** POSTs one JSON-RPC request with the standard 2026-07-28 headers and `_meta`. */
export async function post(url: string, method: string, params: Record<string, unknown> = {}, opts: PostOptions = {}): Promise<WireReply> {
  const id = opts.id ?? nextId++;
  const fullParams = { ...params, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: opts.caps ?? {}, ...opts.meta } };
  const name = nameHeaderFor(method, params);
  const res = await (opts.fetch ?? fetch)(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name !== undefined ? { 'mcp-name': name } : {}),
      ...opts.headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: fullParams }),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  return readReply(res);
}

export async function readReply(res: Response): Promise<WireReply> {
  const contentType = res.headers.get('content-type') ?? '';
  const text = await res.text();
  if (contentType.includes('text/event-stream')) {
    const messages = text
      .split('\n')
      // An empty `data:` is a resumability priming event (an event id, no message).
      .filter((l) => l.startsWith('data:') && l.slice(5).trim() !== '')
      .map((l) => JSON.parse(l.slice(5)) as Record<string, unknown>);
    const last = messages.pop() ?? {};
    return { status: res.status, contentType, headers: res.headers, message: last, notifications: messages };
  }
  return { status: res.status, contentType, headers: res.headers, message: text ? (JSON.parse(text) as Record<string, unknown>) : {}, notifications: [] };
}

const ServerInfoMeta = z.looseObject({ 'io.modelcontextprotocol/serverInfo': z.object({ name: z.string(), version: z.string() }) });
const Cacheable = z.object({ ttlMs: z.int().min(0), cacheScope: z.enum(['public', 'private']) });
/**
 * A 2026-07-28 elicitation's params. URL mode has no `elicitationId` any more (../shared/spec/README.md
 * §2.4), which the SDK's schema (2025-11-25's shape) still requires: that mode is checked here.
 */
const ElicitParams2026 = z.union([
  ElicitRequestSchema.shape.params.refine((p) => (p as { mode?: unknown }).mode !== 'url', 'URL mode is checked below'),
  z.strictObject({ mode: z.literal('url'), message: z.string(), url: z.url(), _meta: z.looseObject({}).optional() }),
]);
const InputRequest = z.union([
  z.strictObject({ method: z.literal('elicitation/create'), params: ElicitParams2026 }),
  z.strictObject({ method: z.literal('sampling/createMessage'), params: CreateMessageRequestSchema.shape.params }),
  z.strictObject({ method: z.literal('roots/list'), params: z.looseObject({}).optional() }),
]);
const InputRequired = z.looseObject({
  resultType: z.literal('input_required'),
  inputRequests: z.record(z.string().min(1), InputRequest),
  requestState: z.string().min(1),
  _meta: ServerInfoMeta,
});

/** The tasks extension's `Task` fields (ext-tasks schema.ts), strictly: no `ttl`, `pollInterval` or `requestState`. */
const ISO = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
const TaskFields = {
  taskId: z.string().min(1),
  status: z.enum(['working', 'input_required', 'completed', 'failed', 'cancelled']),
  statusMessage: z.string().optional(),
  createdAt: ISO,
  lastUpdatedAt: ISO,
  ttlMs: z.union([z.int().positive(), z.null()]),
  pollIntervalMs: z.int().positive().optional(),
  _meta: ServerInfoMeta,
};
const CreateTaskResult = z.strictObject({ resultType: z.literal('task'), ...TaskFields });
const DetailedTask = z
  .strictObject({
    resultType: z.literal('complete'),
    ...TaskFields,
    inputRequests: z.record(z.string().min(1), InputRequest).optional(),
    // A completed task's result is a full 2026-07-28 result of the original request (ext-tasks tasks.md).
    result: CallToolResultSchema.and(z.looseObject({ resultType: z.string().min(1) })).optional(),
    error: z.strictObject({ code: z.int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .refine((t) => (t.status === 'input_required') === (t.inputRequests !== undefined), 'inputRequests exactly when input_required')
  .refine((t) => t.result === undefined || t.status === 'completed', 'result only when completed')
  .refine((t) => t.error === undefined || t.status === 'failed', 'error only when failed');
const TaskAck = z.strictObject({ resultType: z.literal('complete'), _meta: ServerInfoMeta });

const RESULT_SCHEMAS: Record<string, z.ZodType> = {
  'tasks/get': DetailedTask,
  'tasks/update': TaskAck,
  'tasks/cancel': TaskAck,
  'tools/call': CallToolResultSchema,
  'prompts/get': GetPromptResultSchema,
  'resources/read': ReadResourceResultSchema,
  'tools/list': ListToolsResultSchema,
  'server/discover': DiscoverResultSchema,
};
const CACHEABLE = new Set(['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read']);

/** Throws unless `message` is a 2026-07-28-valid response the gateway may send for `method`. */
export function assertWireResponse(method: string, message: Record<string, unknown>): void {
  const envelope = z
    .union([
      z.strictObject({ jsonrpc: z.literal('2.0'), id: z.union([z.string(), z.number()]), result: z.looseObject({}) }),
      z.strictObject({
        jsonrpc: z.literal('2.0'),
        id: z.union([z.string(), z.number(), z.null()]),
        error: z.strictObject({ code: z.int(), message: z.string().min(1), data: z.unknown().optional() }),
      }),
    ])
    .parse(message);
  if (!('result' in envelope)) {
    if ([-32002, -32042].includes(envelope.error.code)) throw new Error(`forbidden error code ${envelope.error.code}`);
    return;
  }
  const result = envelope.result as Record<string, unknown>;
  if (result['resultType'] === 'input_required') {
    if (!['tools/call', 'prompts/get', 'resources/read'].includes(method)) throw new Error(`input_required on ${method}`);
    InputRequired.parse(result);
    return;
  }
  if (result['resultType'] === 'task') {
    if (method !== 'tools/call') throw new Error(`a task result on ${method}`);
    CreateTaskResult.parse(result);
    return;
  }
  z.looseObject({ resultType: z.literal('complete'), _meta: ServerInfoMeta }).parse(result);
  if (CACHEABLE.has(method)) Cacheable.parse(result);
  const schema = RESULT_SCHEMAS[method];
  if (schema) schema.parse(result);
}

/** Throws unless `n` is a notification the gateway may put on a request's stream. */
export function assertWireNotification(n: Record<string, unknown>): void {
  z.strictObject({
    jsonrpc: z.literal('2.0'),
    method: z.enum(['notifications/progress', 'notifications/message']),
    params: z.looseObject({}),
  }).parse(n);
}

/** Opens a `subscriptions/listen` stream and collects its JSON-RPC messages (expects an SSE answer). */
export async function openListen(
  url: string,
  id: number,
  notifications: Record<string, unknown>,
  opts: { caps?: Record<string, unknown>; headers?: Record<string, string> } = {},
) {
  const ac = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    signal: ac.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
      ...opts.headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: { notifications, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: opts.caps ?? {} } },
    }),
  });
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    throw new Error(`listen answered ${res.status} ${res.headers.get('content-type') ?? ''}: ${await res.text()}`);
  }
  const messages: Record<string, unknown>[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const done = (async () => {
    for (;;) {
      const { value, done: end } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (end) return;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const l of lines) if (l.startsWith('data:')) messages.push(JSON.parse(l.slice(5)) as Record<string, unknown>);
    }
  })();
  /** Waits until the stream has carried `n` messages (throws after `ms`). */
  const waitFor = (n: number, ms = 30_000): Promise<void> => until(`${n} messages on the listen stream`, () => messages.length >= n, ms);
  return { messages, waitFor, done, close: () => ac.abort() };
}

/** One raw JSON-RPC request in a legacy (2025-11-25) session, as a client of that era sends it. */
export function postInSession(url: string, sessionId: string, method: string, opts: { id?: number; headers?: Record<string, string> } = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
      ...opts.headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: opts.id ?? 1, method, params: {} }),
  });
}

/** A 2025-11-25 `initialize` POSTed by hand, as a client of that era opens a session; the raw answer. */
export function postInitialize(url: string, clientName = 'legacy'): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: clientName, version: '1' } },
    }),
  });
}

/**
 * Opens a legacy (2025-11-25) session as a raw client does: `initialize` (declaring `capabilities`),
 * then `notifications/initialized`; its session id. `headers`: the caller's own (content type, accept, key).
 */
export async function openLegacySession(
  url: string,
  headers: Record<string, string>,
  clientName = 'raw',
  capabilities: Record<string, unknown> = {},
): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: clientName, version: '1' } },
    }),
  });
  const sid = init.headers.get('mcp-session-id');
  await init.body?.cancel();
  if (!sid) throw new Error(`no legacy session: HTTP ${init.status}`);
  const inSession = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const ack = await fetch(url, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await ack.body?.cancel();
  return sid;
}

/** One SSE event as read: its id, if any, and its data ('' for a priming event, which carries only an id). */
export interface SseEvent {
  id: string | undefined;
  data: string;
}

/** Reads SSE events from `res` until `stop` says so or the stream ends; the stream is let go after. */
export async function readSseEvents(res: Response, stop: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  try {
    while (!stop(events)) {
      const { value, done } = await reader.read();
      if (done) break;
      events.push({ id: value.id, data: value.data });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return events;
}
