/**
 * A bounded log of a call's events (progress, log lines) with sequence numbers, so a reader that
 * comes late (a retry after a pause, a task poll, a legacy stream that reconnects) catches up from the
 * last sequence number it saw. When the log is full the oldest events go; a reader learns how many it
 * missed.
 */
export class EventLog<E> {
  readonly #max: number;
  readonly #items: { seq: number; event: E }[] = [];
  #seq = 0;

  constructor(max: number) {
    this.#max = Math.max(1, max);
  }

  /** The sequence number of the newest event (0 when none). */
  get lastSeq(): number {
    return this.#seq;
  }

  /** Appends `event`; returns its sequence number. */
  push(event: E): number {
    this.#seq += 1;
    this.#items.push({ seq: this.#seq, event });
    if (this.#items.length > this.#max) this.#items.shift();
    return this.#seq;
  }

  /** Events after `since`, oldest first, and how many of them were already dropped. */
  since(since: number): { events: { seq: number; event: E }[]; missed: number } {
    const first = this.#items[0]?.seq ?? this.#seq + 1;
    const missed = Math.max(0, first - since - 1);
    return { events: this.#items.filter((i) => i.seq > since), missed };
  }
}
