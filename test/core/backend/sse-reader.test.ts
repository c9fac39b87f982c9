/** The event-stream parser of the backend leg: line ends, events split across chunks, fields, limits. */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { SseParser, readEvents, wholeUtf8, type SseEvent } from '../../../src/core/backend/sse-reader.js';

function parse(chunks: string[], maxBytes?: number): { events: SseEvent[]; retries: number[]; fed: boolean[] } {
  const events: SseEvent[] = [];
  const retries: number[] = [];
  const parser = new SseParser({ onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms), onEnd: () => undefined }, maxBytes);
  const fed = chunks.map((c) => parser.feed(c));
  return { events, retries, fed };
}

describe('the event-stream parser', () => {
  it('reads events with LF, CRLF and CR line ends, in any split, and joins data lines with newlines', () => {
    const text = 'id: 1\ndata: a\ndata: b\n\r\nevent: message\r\ndata:c\r\n\r\ndata: d\r\r\n';
    const whole = parse([text]).events;
    expect(whole).toEqual([
      { id: '1', event: undefined, data: 'a\nb' },
      { id: undefined, event: 'message', data: 'c' },
      { id: undefined, event: undefined, data: 'd' },
    ]);
    for (let size = 1; size < 7; size++) {
      const chunks: string[] = [];
      for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
      expect(parse(chunks).events).toEqual(whole);
    }
  });

  it('dispatches only events with data lines, drops a leading BOM, skips comments and unknown fields, hands on a numeric retry', () => {
    const { events, retries } = parse(['\ufeffid: 9\n\n: a comment\nfoo: bar\nretry: 1500\nretry: soon\ndata\nid: x\0y\n\n']);
    expect(events).toEqual([{ id: undefined, event: undefined, data: '' }]);
    expect(retries).toEqual([1500]);
  });

  it('gives up on an event longer than its limit', () => {
    const { fed, events } = parse(['data: 0123456789', '0123456789\n', '\n'], 16);
    expect(fed).toEqual([true, false, true]);
    expect(events).toEqual([]);
  });

  it('tells how many bytes are whole UTF-8 characters', () => {
    const text = Buffer.from('aé€😀');
    expect(wholeUtf8(text)).toBe(text.length);
    expect(wholeUtf8(Buffer.alloc(0))).toBe(0);
    // cut inside é (2 bytes), € (3 bytes) and 😀 (4 bytes)
    expect(wholeUtf8(text.subarray(0, 2))).toBe(1);
    expect(wholeUtf8(text.subarray(0, 4))).toBe(3);
    expect(wholeUtf8(text.subarray(0, 5))).toBe(3);
    expect(wholeUtf8(text.subarray(0, 7))).toBe(6);
    expect(wholeUtf8(text.subarray(0, 8))).toBe(6);
    expect(wholeUtf8(text.subarray(0, 9))).toBe(6);
  });

  it('reads a response whose characters are split across chunks, and tells its end once', async () => {
    const bytes = Buffer.from('data: aé€😀z\n\nid: 7\ndata: ü\n\n');
    const res = Object.assign(new PassThrough(), { complete: true });
    const events: SseEvent[] = [];
    const ends: (Error | undefined)[] = [];
    const ended = new Promise<void>((resolve) =>
      readEvents(res as unknown as IncomingMessage, {
        onEvent: (e) => events.push(e),
        onEnd: (e) => {
          ends.push(e);
          resolve();
        },
      }),
    );
    for (let i = 0; i < bytes.length; i++) res.write(bytes.subarray(i, i + 1));
    res.end();
    await ended;
    expect(events).toEqual([
      { id: undefined, event: undefined, data: 'aé€😀z' },
      { id: '7', event: undefined, data: 'ü' },
    ]);
    expect(ends).toEqual([undefined]);
  });
});
