/**
 * Reads a backend's `text/event-stream` response as it arrives: one push parser fed from the socket's
 * data events, so every event of a chunk is handed on in the same turn of the event loop, with no
 * stream pipeline per response (issue 30). The parser is one object with its state in fields and its
 * steps on the prototype: a parked call's open stream holds it, and a parser made of closures
 * (eventsource-parser's createParser: ten of them and their context) cost it about 0.8 KiB.
 *
 * The format as eventsource-parser reads it (and the HTML standard says): lines end with CRLF, LF or
 * CR; `data:` lines are joined with newlines; an empty line dispatches the event when it has data
 * lines; `id` (without NUL) and `event` apply to the next dispatched event only; `retry` with digits
 * only is handed on; comments and unknown fields are skipped; a leading BOM is dropped.
 */
import type { IncomingMessage } from 'node:http';

/** The longest event the reader holds (a larger one ends the stream with an error). */
export const MAX_EVENT_BYTES = 64 * 1024 * 1024;

export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string | undefined;
  readonly data: string;
}

export interface SseHandlers {
  onEvent(event: SseEvent): void;
  /** The server's `retry:` field: how long to wait before reconnecting. */
  onRetry?(ms: number): void;
  /** The stream is over: ended by the server (`error` undefined) or broken. Called once. */
  onEnd(error?: Error): void;
}

const DIGITS = /^\d+$/;

/** An event-stream parser: `feed` it text as it comes; complete events go to `handlers.onEvent`. */
export class SseParser {
  readonly #handlers: SseHandlers;
  readonly #maxBytes: number;
  /** An unfinished line carried over to the next chunk. */
  #pending = '';
  #first = true;
  #over = false;
  #data = '';
  #dataLines = 0;
  #id: string | undefined;
  #event: string | undefined;

  constructor(handlers: SseHandlers, maxBytes = MAX_EVENT_BYTES) {
    this.#handlers = handlers;
    this.#maxBytes = maxBytes;
  }

  /** The stream is over: tells `handlers.onEnd` once; nothing is parsed after. */
  end(error?: Error): void {
    if (this.#over) return;
    this.#over = true;
    this.#handlers.onEnd(error);
  }

  /** Parses `chunk`; false once the event being read is longer than the limit (nothing more is read then). */
  feed(chunk: string): boolean {
    if (this.#over) return true;
    let text = chunk;
    if (this.#first && text.length) {
      this.#first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.#pending) {
      text = this.#pending + text;
      this.#pending = '';
    }
    let start = 0;
    while (start < text.length) {
      const cr = text.indexOf('\r', start);
      const lf = text.indexOf('\n', start);
      const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (end === -1 || (end === cr && end === text.length - 1)) break;
      this.#line(text, start, end);
      start = end + (end === cr && text.charCodeAt(end + 1) === 10 ? 2 : 1);
    }
    this.#pending = start === 0 ? text : text.slice(start);
    if (this.#pending.length + this.#data.length <= this.#maxBytes) return true;
    this.#pending = '';
    this.#reset();
    return false;
  }

  #line(text: string, start: number, end: number): void {
    if (start === end) {
      if (this.#dataLines > 0) this.#handlers.onEvent({ id: this.#id, event: this.#event, data: this.#data });
      this.#reset();
      return;
    }
    if (text.charCodeAt(start) === 58) return; // ':' a comment
    const colon = text.indexOf(':', start);
    const fieldEnd = colon === -1 || colon > end ? end : colon;
    const field = text.slice(start, fieldEnd);
    let valueStart = fieldEnd === end ? end : fieldEnd + 1;
    if (valueStart < end && text.charCodeAt(valueStart) === 32) valueStart += 1;
    const value = text.slice(valueStart, end);
    switch (field) {
      case 'data':
        this.#data = this.#dataLines === 0 ? value : `${this.#data}\n${value}`;
        this.#dataLines += 1;
        return;
      case 'event':
        this.#event = value || undefined;
        return;
      case 'id':
        if (!value.includes('\0')) this.#id = value;
        return;
      case 'retry':
        if (DIGITS.test(value)) this.#handlers.onRetry?.(parseInt(value, 10));
        return;
      default:
        return;
    }
  }

  #reset(): void {
    this.#data = '';
    this.#dataLines = 0;
    this.#id = undefined;
    this.#event = undefined;
  }
}

/**
 * Reads `res` as an event stream to its end; `handlers.onEnd` is called once, when it is over. The
 * bytes are decoded here, not by a StringDecoder (`setEncoding`): one per open stream, with a buffer of
 * its own, cost a parked call about 0.2 KiB (issue 30). Listeners are added with `on`: a `once`
 * wrapper would stay with the response as long as it is open, and `end` is called once anyway.
 */
export function readEvents(res: IncomingMessage, handlers: SseHandlers): void {
  const parser = new SseParser(handlers);
  /** The first bytes of a character the last chunk ended in the middle of. */
  let partial: Buffer | undefined;
  res.on('data', (chunk: Buffer) => {
    const bytes = partial ? Buffer.concat([partial, chunk]) : chunk;
    const whole = wholeUtf8(bytes);
    partial = whole < bytes.length ? Buffer.from(bytes.subarray(whole)) : undefined;
    if (!parser.feed(bytes.toString('utf8', 0, whole))) res.destroy(new Error(`an event of the backend's stream is longer than ${MAX_EVENT_BYTES} bytes`));
  });
  res.on('error', (e) => parser.end(e));
  res.on('close', () => parser.end(res.complete ? undefined : new Error('the response stream broke')));
}

/**
 * How many of `bytes` are whole UTF-8 characters: all of them, unless they end with the first bytes of
 * a character (its lead byte among the last three announces more bytes than follow it).
 */
export function wholeUtf8(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = bytes[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: its lead byte is further back
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return length > back ? n - back : n;
  }
  return n;
}
