/** The event-stream parser of the backend leg: line ends, events split across chunks, fields, limits. */
import { describe, expect, it } from 'vitest';
import { SseParser, type SseEvent } from '../../../src/core/backend/sse-reader.js';

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
});
