/**
 * Exact correlation of backend requests over streamable HTTP (`../shared/spec/sdk.md` §4.2).
 *
 * A 2025-11-25 server sends the elicitation/sampling/roots requests and the notifications that belong
 * to a call on that call's POST response stream, but the SDK client does not tell its handlers which
 * stream a message came on. This `fetch` wrapper does: the gateway puts its call id in the outgoing
 * request's `params._meta[CALL_ID_META]`; the wrapper removes it before the request leaves, and tags
 * every request and notification read from that POST's SSE response with `_meta[RELATED_CALL_META]`.
 * Messages on the standalone GET stream carry no tag (they belong to no call).
 */

import { setMaxListeners } from 'node:events';
import { linkedController } from '../../util/abort.js';

/** Transport signals already allowed any number of listeners. */
const unbounded = new WeakSet<AbortSignal>();

/** Set by the gateway on outgoing requests; never reaches the backend. */
export const CALL_ID_META = 'io.github.mcp-mrtr-gateway/callId';
/** Set on incoming backend messages that arrived on a call's response stream. */
export const RELATED_CALL_META = 'io.github.mcp-mrtr-gateway/relatedCallId';

type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

function takeCallId(body: unknown): string | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const meta = (body as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  const id = meta?.[CALL_ID_META];
  if (typeof id !== 'string' || !meta) return undefined;
  delete meta[CALL_ID_META];
  if (Object.keys(meta).length === 0) delete (body as { params: { _meta?: unknown } }).params._meta;
  return id;
}

/**
 * Tags a message line with `callId`; with no call id, removes any tag the backend put there itself
 * (only the gateway says which call a message belongs to).
 */
function tagLine(line: string, callId: string | undefined): string {
  if (!line.startsWith('data:')) return line;
  if (callId === undefined && !line.includes(RELATED_CALL_META)) return line;
  const text = line.slice(5).trimStart();
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return line; // multi-line data or not JSON: passed through untagged
  }
  if (!msg || typeof msg !== 'object' || typeof (msg as { method?: unknown }).method !== 'string') return line;
  const m = msg as { params?: Record<string, unknown> };
  const params = (m.params ??= {});
  const meta = (params['_meta'] ??= {}) as Record<string, unknown>;
  if (callId === undefined) delete meta[RELATED_CALL_META];
  else meta[RELATED_CALL_META] = callId;
  return `data: ${JSON.stringify(msg)}`;
}

/**
 * Told when a call's response stream ended or broke before its response. `resumable`: the stream
 * carried event ids, so the SDK client resumes it (`Last-Event-ID`) and the response may still come.
 */
export type StreamLost = (callId: string, resumable: boolean) => void;

/**
 * Tags every message of a call's response stream. When the stream ends or breaks before the call's
 * response came through it (the backend died, the connection dropped), `onLost` is told.
 */
function tagStream(
  body: ReadableStream<Uint8Array>,
  callId: string | undefined,
  onLost: StreamLost | undefined,
  onEnd: () => void,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const reader = body.getReader();
  let buffer = '';
  let sawResponse = false;
  let sawEventId = false;
  const tag = (line: string): string => {
    if (!sawEventId && line.startsWith('id:') && line.slice(3).trim() !== '') sawEventId = true;
    const tagged = tagLine(line, callId);
    if (!sawResponse && tagged === line && isResponseLine(line)) sawResponse = true;
    return tagged;
  };
  return new ReadableStream<Uint8Array>({
    // Reads until it has a whole line to hand on (a pull that enqueues nothing is not called again).
    async pull(controller) {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (e) {
          onEnd();
          if (!sawResponse && callId !== undefined) onLost?.(callId, sawEventId);
          controller.error(e);
          return;
        }
        if (chunk.done) {
          buffer += decoder.decode();
          if (buffer) controller.enqueue(encoder.encode(tag(buffer)));
          onEnd();
          if (!sawResponse && callId !== undefined) onLost?.(callId, sawEventId);
          controller.close();
          return;
        }
        buffer += decoder.decode(chunk.value, { stream: true });
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        if (lines.length) {
          controller.enqueue(encoder.encode(lines.map((l) => tag(l.replace(/\r$/, ''))).join('\n') + '\n'));
          return;
        }
      }
    },
    cancel(reason) {
      onEnd();
      return reader.cancel(reason);
    },
  });
}

/** True for an SSE data line that carries a JSON-RPC response (an id and no method). */
function isResponseLine(line: string): boolean {
  if (!line.startsWith('data:')) return false;
  try {
    const msg = JSON.parse(line.slice(5).trimStart()) as { id?: unknown; method?: unknown };
    return msg.id !== undefined && msg.method === undefined;
  } catch {
    return false;
  }
}

/**
 * Wraps `inner` (default: global fetch) with call-id tagging. `onLost` hears of a call whose
 * response stream ended or broke before its response arrived.
 */
export function createCorrelatingFetch(inner: FetchLike = (u, i) => fetch(u, i), onLost?: StreamLost): FetchLike {
  /**
   * Sends with a signal of the request's own, linked to the transport's long-lived one while the
   * exchange lasts: fetch keeps its abort listener on the signal it is given until the request is
   * garbage-collected, so under load the shared signal would collect thousands of them.
   */
  const send = async (input: string | URL, init: RequestInit | undefined, callId: string | undefined): Promise<Response> => {
    // One listener per open exchange on the transport's signal, held exactly while the exchange lasts
    // (parked calls and tasks keep their streams open: dozens at once on one session are expected).
    if (init?.signal && !unbounded.has(init.signal)) {
      setMaxListeners(0, init.signal);
      unbounded.add(init.signal);
    }
    const link = linkedController(init?.signal ?? undefined);
    let res: Response;
    try {
      res = await inner(input, { ...init, signal: link.controller.signal });
    } catch (e) {
      link.dispose();
      throw e;
    }
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      link.dispose(); // a JSON body is read at once; only streams stay abortable to the end
      return res;
    }
    return new Response(
      tagStream(res.body, callId, onLost, () => link.dispose()),
      { status: res.status, statusText: res.statusText, headers: res.headers },
    );
  };
  return async (input, init) => {
    // Streams that belong to no call (the standalone GET stream, untagged POSTs) are cleaned of tags.
    if (init?.method !== 'POST' || typeof init.body !== 'string') return send(input, init, undefined);
    let body: unknown;
    try {
      body = JSON.parse(init.body);
    } catch {
      return send(input, init, undefined);
    }
    const callId = takeCallId(body);
    if (callId === undefined) return send(input, init, undefined);
    return send(input, { ...init, body: JSON.stringify(body) }, callId);
  };
}
