/**
 * SSE resumption for one legacy session (2025-11-25 transports/streamable-http "Resumability"): every
 * message the session's transport sends on a stream is kept under an event id, and a client that lost
 * a stream reconnects with `Last-Event-ID` and gets what followed, once. One store per session, so a
 * session can never replay another's events. Bounded: the newest `perStream` events of each stream and
 * `streams` streams are kept (older ones are dropped; resuming from a dropped event is refused).
 *
 * Event ids sort in the order the session sent them: `<sequence, zero-padded>.<stream id>`.
 */
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

export interface SessionEventStoreOptions {
  readonly perStream?: number;
  readonly streams?: number;
}

export class SessionEventStore implements EventStore {
  readonly #perStream: number;
  readonly #maxStreams: number;
  /** Stream id → its newest events, oldest first (a Map keeps streams in the order they started). */
  readonly #streams = new Map<string, { seq: number; id: string; message: JSONRPCMessage }[]>();
  #seq = 0;

  constructor(options: SessionEventStoreOptions = {}) {
    this.#perStream = options.perStream ?? 256;
    this.#maxStreams = options.streams ?? 64;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const seq = ++this.#seq;
    const id = `${String(seq).padStart(12, '0')}.${streamId}`;
    let events = this.#streams.get(streamId);
    if (!events) {
      events = [];
      this.#streams.set(streamId, events);
      if (this.#streams.size > this.#maxStreams) this.#streams.delete(this.#streams.keys().next().value!);
    }
    events.push({ seq, id, message });
    if (events.length > this.#perStream) events.shift();
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const parsed = parse(eventId);
    return parsed && this.#streams.has(parsed.streamId) ? parsed.streamId : undefined;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const parsed = parse(lastEventId);
    const events = parsed ? this.#streams.get(parsed.streamId) : undefined;
    if (!parsed || !events) throw new Error('Unknown Last-Event-ID');
    // The event resumed from must still be held (or be the newest dropped one's successor): no gaps.
    const first = events[0];
    if (first && first.seq > parsed.seq + 1 && !events.some((e) => e.seq === parsed.seq)) throw new Error('Last-Event-ID is too old to resume from');
    for (const e of events) if (e.seq > parsed.seq) await send(e.id, e.message);
    return parsed.streamId;
  }
}

function parse(eventId: string): { seq: number; streamId: string } | undefined {
  const m = /^(\d{12})\.(.+)$/.exec(eventId);
  return m ? { seq: Number(m[1]), streamId: m[2]! } : undefined;
}
