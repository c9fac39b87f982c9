/**
 * The bytes an SSE reply holds for a client that does not read, bounded. A reply is a ReadableStream
 * the HTTP layer writes to the socket as the socket drains (@hono/node-server waits for `drain`), so
 * what a client does not read stays queued in the stream: enqueued without a bound, a client that opened
 * a `tools/call` whose backend streamed progress, or a listen stream while lists changed, and never read
 * it, made the gateway hold every message for as long as the connection lasted (1 GB of RSS in under a
 * minute for two such clients).
 *
 * `must` queues what cannot be left out (a response, a request to the client) whatever the queue holds;
 * `may` queues what can (progress, log lines, list changes, keep-alives) only while the client has fewer
 * than `maxQueuedBytes` unread: past that, a message with a `key` is kept as the latest of its key and
 * sent once the client has read enough (a later progress of the same token, or a list change of the
 * same kind, says all the earlier one said), and one without a key is dropped.
 */
export const SSE_MAX_QUEUED_BYTES = 1024 * 1024;

export interface SseQueue {
  readonly stream: ReadableStream<Uint8Array>;
  /** Queues what waits under a key, then `bytes`, whatever the client left unread (no-op once closed). */
  must(bytes: Uint8Array): void;
  /** Queues `bytes` if the client keeps up; else keeps the latest under `key`, or drops it. */
  may(bytes: Uint8Array, key?: string): void;
  /** Sends what waits under a key, then ends the stream. */
  close(): void;
  /** Ends the stream at once, dropping what the client has not read (its connection is cut). */
  abort(reason: Error): void;
  /** Bytes queued and not yet read by the client, those waiting under a key included. */
  readonly queuedBytes: number;
  /** Messages dropped since the stream opened (keyless ones, and ones replaced under their key). */
  readonly dropped: number;
}

export interface SseQueueOptions {
  /** Called once the stream is set up (enqueue the first events there). */
  start?(queue: SseQueue): void;
  /** The client cancelled the stream (went away). */
  cancel?(): void;
  maxQueuedBytes?: number;
}

export function sseQueue(options: SseQueueOptions = {}): SseQueue {
  const max = options.maxQueuedBytes ?? SSE_MAX_QUEUED_BYTES;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let dropped = 0;
  /**
   * Keyed messages waiting for the client to catch up, latest per key, oldest first; their bytes are held
   * to `max` too (keys come new all the time: a progress token per call, a task id per task), the oldest
   * dropped to make room.
   */
  const pending = new Map<string, Uint8Array>();
  let pendingBytes = 0;
  const unpend = (key: string): Uint8Array | undefined => {
    const bytes = pending.get(key);
    if (bytes === undefined) return undefined;
    pending.delete(key);
    pendingBytes -= bytes.length;
    return bytes;
  };
  const clearPending = (): void => {
    pending.clear();
    pendingBytes = 0;
  };
  const enqueue = (bytes: Uint8Array): void => {
    if (closed) return;
    try {
      controller.enqueue(bytes);
    } catch {
      closed = true;
    }
  };
  const room = (): boolean => (controller.desiredSize ?? 0) > 0;
  const flush = (): void => {
    for (const key of pending.keys()) {
      if (!room()) return;
      enqueue(unpend(key)!);
    }
  };
  const queue: SseQueue = {
    stream: undefined as unknown as ReadableStream<Uint8Array>,
    // What waited under a key was sent before this: it goes first, whatever the queue holds.
    must(bytes) {
      for (const waiting of pending.values()) enqueue(waiting);
      clearPending();
      enqueue(bytes);
    },
    may(bytes, key) {
      if (closed) return;
      flush();
      if (room() && pending.size === 0) return enqueue(bytes);
      if (key === undefined) {
        dropped++;
        return;
      }
      if (unpend(key)) dropped++;
      for (const oldest of pending.keys()) {
        if (pendingBytes + bytes.length <= max) break;
        unpend(oldest);
        dropped++;
      }
      pending.set(key, bytes);
      pendingBytes += bytes.length;
    },
    close() {
      if (closed) return;
      for (const bytes of pending.values()) enqueue(bytes);
      clearPending();
      closed = true;
      try {
        controller.close();
      } catch {
        // cancelled by the client already
      }
    },
    abort(reason) {
      if (closed) return;
      closed = true;
      clearPending();
      controller.error(reason);
    },
    get queuedBytes() {
      return closed ? 0 : Math.max(0, max - (controller.desiredSize ?? max)) + pendingBytes;
    },
    get dropped() {
      return dropped;
    },
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        options.start?.(queue);
      },
      // Called as the client reads: what waited under a key goes out first.
      pull: flush,
      cancel() {
        closed = true;
        clearPending();
        options.cancel?.();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: max }),
  );
  (queue as { stream: ReadableStream<Uint8Array> }).stream = stream;
  return queue;
}

/**
 * The key under which a later notification says all an earlier one said (`may`'s key), or undefined
 * for one no later one stands for (a log line): a progress token's report, a list change of one kind, a
 * resource's update, a task's state.
 */
export function supersedingKey(message: unknown): string | undefined {
  const { method, params: given } = (message ?? {}) as { method?: unknown; params?: unknown };
  if (typeof method !== 'string') return undefined;
  const params = (given ?? {}) as Record<string, unknown>;
  switch (method) {
    case 'notifications/progress':
      return keyed(method, params['progressToken']);
    case 'notifications/resources/updated':
      return keyed(method, params['uri']);
    case 'notifications/tasks':
    case 'notifications/tasks/status':
      return keyed(method, params['taskId']);
    default:
      return method.endsWith('/list_changed') ? method : undefined;
  }
}

function keyed(method: string, of: unknown): string | undefined {
  return typeof of === 'string' || typeof of === 'number' ? `${method}:${typeof of}:${String(of)}` : undefined;
}

const LF = 10;

/**
 * `body`, an SSE stream something else writes as fast as it likes (the SDK's server transport on the
 * legacy route), read as it comes and handed to the client through an `sseQueue`: what the client does
 * not read is held to the same bound. While the client keeps up each chunk goes on as it came; once it
 * is behind, each event is looked at: one that carries an `id` (a response, a request to the client)
 * always goes, a notification waits as the latest of its `supersedingKey` or is dropped.
 */
export function boundedSse(body: ReadableStream<Uint8Array>, maxQueuedBytes = SSE_MAX_QUEUED_BYTES): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let partial = '';
  const queue = sseQueue({
    maxQueuedBytes,
    cancel: () => {
      reader.cancel().then(undefined, () => undefined);
    },
  });
  const event = (text: string): void => {
    const bytes = encoder.encode(text);
    if (queue.queuedBytes < maxQueuedBytes) return queue.must(bytes);
    const message = messageOf(text);
    if (message && 'id' in message) queue.must(bytes);
    else queue.may(bytes, message ? supersedingKey(message) : 'no-message');
  };
  const pump = async (): Promise<void> => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      // Whole events while the client keeps up (how a transport writes them): on as they came.
      if (partial === '' && queue.queuedBytes < maxQueuedBytes && value.length >= 2 && value[value.length - 1] === LF && value[value.length - 2] === LF) {
        queue.must(value);
        continue;
      }
      partial += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = partial.indexOf('\n\n')) >= 0) {
        event(partial.slice(0, at + 2));
        partial = partial.slice(at + 2);
      }
    }
    if (partial !== '') event(partial);
    queue.close();
  };
  pump().then(undefined, (e: unknown) => queue.abort(e instanceof Error ? e : new Error(String(e))));
  return queue.stream;
}

/** The JSON-RPC message of one SSE event (its `data:` lines), or undefined. */
function messageOf(text: string): Record<string, unknown> | undefined {
  const data = text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
    .join('\n');
  if (data === '') return undefined;
  try {
    const v: unknown = JSON.parse(data);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
