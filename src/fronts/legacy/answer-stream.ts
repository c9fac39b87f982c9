/**
 * The stream a call answered beside the SDK server (./direct-call.ts) moves to when it runs past its
 * JSON budget: a POST answer that takes long needs what the SDK's own streams give it, a priming event
 * (a resumption id) and keep-alives, so that a proxy that closes quiet connections does not cut it and
 * a client that lost it resumes with `Last-Event-ID`. The stream joins the session transport's own
 * bookkeeping, so the SDK stores the answer in the session's event store, writes it wherever the client
 * is reading (this stream, or a GET that resumed it) and ends the stream, as for a request it served
 * itself.
 *
 * That bookkeeping is the SDK transport's (`@modelcontextprotocol/server` 2.4, pinned): its stream
 * maps, `writePrimingEvent` and `startKeepAlive`. `streamingTransport` checks they are there; where they
 * are not, no call is answered beside the SDK server at all. test/fronts/legacy/direct-call.test.ts
 * resumes such a stream, and fails if they move.
 */
import { randomUUID } from 'node:crypto';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';

/** One of the transport's streams, as it keeps them. */
interface TransportStream {
  controller?: ReadableStreamDefaultController<Uint8Array>;
  encoder?: TextEncoder;
  cleanup(): void;
}

/** What of the SDK's `WebStandardStreamableHTTPServerTransport` a moved answer uses. */
export interface StreamingTransport {
  readonly _streamMapping: Map<string, TransportStream>;
  readonly _requestToStreamMapping: Map<string | number, string>;
  writePrimingEvent(controller: ReadableStreamDefaultController<Uint8Array>, encoder: TextEncoder, streamId: string, protocolVersion: string): Promise<void>;
  startKeepAlive(controller: ReadableStreamDefaultController<Uint8Array>, encoder: TextEncoder): ReturnType<typeof setInterval> | undefined;
  send(message: JSONRPCMessage): Promise<void>;
}

/** `transport` as a `StreamingTransport`, or undefined if the SDK's bookkeeping is not where it was. */
export function streamingTransport(transport: unknown): StreamingTransport | undefined {
  const t = transport as Partial<StreamingTransport> & { _enableJsonResponse?: unknown };
  const ok =
    t._enableJsonResponse !== true && // a transport that answers JSON writes to no stream
    t._streamMapping instanceof Map &&
    t._requestToStreamMapping instanceof Map &&
    typeof t.writePrimingEvent === 'function' &&
    typeof t.startKeepAlive === 'function' &&
    typeof t.send === 'function';
  return ok ? (t as StreamingTransport) : undefined;
}

export interface AnswerStream {
  readonly response: Response;
  /** Sends the answer through the transport (stored, then written where the client reads); with none (a cancelled call), nothing more. */
  deliver(answer: JSONRPCMessage | undefined): Promise<void>;
}

/** Opens request `id`'s stream: the SSE response, its priming event written, keep-alives running. */
export async function openAnswerStream(transport: StreamingTransport, id: string | number, sessionId: string, protocolVersion: string): Promise<AnswerStream> {
  const streamId = randomUUID();
  const encoder = new TextEncoder();
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const readable = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
    // The client went away: the answer is still stored when it comes, for a GET that resumes.
    cancel: () => {
      clearInterval(keepAlive);
      if (transport._streamMapping.get(streamId)?.controller === controller) transport._streamMapping.delete(streamId);
    },
  });
  transport._streamMapping.set(streamId, {
    controller,
    encoder,
    cleanup: () => {
      clearInterval(keepAlive);
      transport._streamMapping.delete(streamId);
      try {
        controller.close();
      } catch {
        // closed already
      }
    },
  });
  transport._requestToStreamMapping.set(id, streamId);
  /** Ends the stream and lets go of request `id`'s routing, where they are still this stream's. */
  const close = (): void => {
    if (transport._requestToStreamMapping.get(id) === streamId) transport._requestToStreamMapping.delete(id);
    const mine = transport._streamMapping.get(streamId);
    if (mine?.controller === controller) mine.cleanup();
  };
  try {
    await transport.writePrimingEvent(controller, encoder, streamId, protocolVersion);
  } catch (e) {
    close();
    throw e;
  }
  // As the SDK does: no keep-alive for a stream that ended meanwhile.
  if (transport._streamMapping.get(streamId)?.controller === controller) keepAlive = transport.startKeepAlive(controller, encoder);
  const headers = {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'mcp-session-id': sessionId,
  };
  return {
    response: new Response(readable, { status: 200, headers }),
    async deliver(answer) {
      if (!answer) {
        // A call its client cancelled: nothing more is routed here, and the stream stays open, as the
        // SDK leaves its own, until the session ends (the client, which got a resumption id, would
        // otherwise resume it and find it ended).
        if (transport._requestToStreamMapping.get(id) === streamId) transport._requestToStreamMapping.delete(id);
        return;
      }
      try {
        await transport.send(answer);
      } catch (e) {
        close(); // nothing will end it now
        throw e;
      }
    },
  };
}
