/**
 * SSE resumption for one legacy session (2025-11-25 transports/streamable-http "Resumability"): every
 * message the session's transport sends on a stream is kept under an event id, and a client that lost
 * a stream reconnects with `Last-Event-ID` and gets what followed, once. One store per session, so a
 * session can never replay another's events. Bounded: the newest `perStream` events of each stream,
 * `streams` streams, and `maxChars` characters of serialised messages in all (the oldest streams go
 * first; one stream alone over it keeps its newest event). Without that last bound a session held the
 * whole results of its newest 64 POSTs: 4.2 MB a session for results of 64 KiB, over a GiB for the
 * default 256 sessions. Messages are kept as the JSON text they were sent as (the size bound needs it;
 * the transport serialises them once more to write them), and parsed on replay.
 *
 * Resuming after an event that is still kept — or after the newest one
 * dropped, whose successors are all kept — replays what followed; resuming from further back would
 * skip events, so it is refused, and `resumable` says so before the transport is asked (the session
 * answers a clear 4xx, never the transport's 500).
 *
 * Event ids sort in the order the session sent them: `<sequence, zero-padded>.<stream id>`. The
 * sequence is the session's, shared by its streams: within one stream it grows but has gaps.
 */
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

export interface SessionEventStoreOptions {
  readonly perStream?: number;
  readonly streams?: number;
  /** Characters of serialised messages kept over all streams (default 1 Mi). */
  readonly maxChars?: number;
}

/** Whether a client can resume after an event id: yes, or why not. */
export type Resumption = { ok: true } | { ok: false; why: 'unknown' | 'too_old' };

interface Stream {
  /** The newest events, oldest first, each message as its JSON text. */
  readonly events: { seq: number; id: string; text: string }[];
  /** The sequence of the newest event dropped from this stream (0: none dropped). */
  dropped: number;
  /** Characters of the texts kept. */
  chars: number;
}

export class SessionEventStore implements EventStore {
  readonly perStream: number;
  readonly maxStreams: number;
  readonly maxChars: number;
  /** Stream id → its kept events (a Map keeps streams in the order they started). */
  readonly #streams = new Map<string, Stream>();
  /** The ids of the streams dropped last (as many as are kept), so a resumption of one is told it is too old. */
  readonly #droppedStreams = new Set<string>();
  #seq = 0;
  /** Characters kept over all streams. */
  #chars = 0;

  constructor(options: SessionEventStoreOptions = {}) {
    this.perStream = options.perStream ?? 256;
    this.maxStreams = options.streams ?? 64;
    this.maxChars = options.maxChars ?? 1024 * 1024;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const seq = ++this.#seq;
    const id = `${String(seq).padStart(12, '0')}.${streamId}`;
    let stream = this.#streams.get(streamId);
    if (!stream) {
      stream = { events: [], dropped: 0, chars: 0 };
      this.#streams.set(streamId, stream);
      if (this.#streams.size > this.maxStreams) this.#dropStream(this.#streams.keys().next().value!);
    }
    const text = JSON.stringify(message);
    stream.events.push({ seq, id, text });
    stream.chars += text.length;
    this.#chars += text.length;
    if (stream.events.length > this.perStream) this.#dropOldest(stream);
    this.#withinChars(streamId, stream);
    return id;
  }

  /** Over `maxChars`: the oldest other streams go, then this stream's oldest events (its newest stays). */
  #withinChars(streamId: string, stream: Stream): void {
    for (const other of this.#streams.keys()) {
      if (this.#chars <= this.maxChars) return;
      if (other !== streamId) this.#dropStream(other);
    }
    while (this.#chars > this.maxChars && stream.events.length > 1) this.#dropOldest(stream);
  }

  #dropOldest(stream: Stream): void {
    const gone = stream.events.shift()!;
    stream.dropped = gone.seq;
    stream.chars -= gone.text.length;
    this.#chars -= gone.text.length;
  }

  /**
   * Whether every event after `lastEventId` is still kept: `unknown` for an id this session never
   * gave, `too_old` when events after it were dropped (or its whole stream was).
   */
  resumable(lastEventId: string): Resumption {
    const parsed = parse(lastEventId);
    if (!parsed || parsed.seq > this.#seq) return { ok: false, why: 'unknown' };
    const stream = this.#streams.get(parsed.streamId);
    // A stream no longer held: dropped as the oldest of more than `maxStreams`, or never this session's.
    if (!stream) return { ok: false, why: this.#droppedStreams.has(parsed.streamId) ? 'too_old' : 'unknown' };
    return parsed.seq >= stream.dropped ? { ok: true } : { ok: false, why: 'too_old' };
  }

  #dropStream(streamId: string): void {
    this.#chars -= this.#streams.get(streamId)?.chars ?? 0;
    this.#streams.delete(streamId);
    this.#droppedStreams.add(streamId);
    if (this.#droppedStreams.size > this.maxStreams) this.#droppedStreams.delete(this.#droppedStreams.values().next().value!);
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const parsed = parse(eventId);
    return parsed && this.#streams.has(parsed.streamId) ? parsed.streamId : undefined;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const verdict = this.resumable(lastEventId);
    if (!verdict.ok) throw new Error(verdict.why === 'unknown' ? 'Unknown Last-Event-ID' : 'Last-Event-ID is too old to resume from');
    const parsed = parse(lastEventId)!;
    for (const e of [...this.#streams.get(parsed.streamId)!.events]) if (e.seq > parsed.seq) await send(e.id, JSON.parse(e.text) as JSONRPCMessage);
    return parsed.streamId;
  }
}

function parse(eventId: string): { seq: number; streamId: string } | undefined {
  const m = /^(\d{12})\.(.+)$/.exec(eventId);
  return m ? { seq: Number(m[1]), streamId: m[2]! } : undefined;
}

/**
 * The answer to a resumption (GET with `Last-Event-ID`) that cannot replay everything that followed
 * the event: 400, as the transport answers an id it cannot read, with a JSON-RPC error that says why
 * and how much a session keeps; undefined when it can resume.
 */
export function resumptionRefusal(events: SessionEventStore, lastEventId: string): Response | undefined {
  const verdict = events.resumable(lastEventId);
  if (verdict.ok) return undefined;
  const error =
    verdict.why === 'unknown'
      ? { code: -32000, message: 'Bad Request: Last-Event-ID is not an event id of this session', data: { reason: 'last_event_id_unknown' } }
      : {
          code: -32000,
          message:
            `Bad Request: Last-Event-ID is older than what this session keeps (the newest ${events.perStream} events of each of its ` +
            `newest ${events.maxStreams} streams, ${events.maxChars} characters of messages in all): events after it are gone, so the ` +
            'stream cannot be resumed; send the request again instead',
          data: { reason: 'last_event_id_too_old', keptPerStream: events.perStream, keptStreams: events.maxStreams, keptChars: events.maxChars },
        };
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error }), { status: 400, headers: { 'content-type': 'application/json' } });
}
