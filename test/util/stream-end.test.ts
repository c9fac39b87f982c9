import { describe, expect, it } from 'vitest';
import { untilEnd } from '../../src/util/stream-end.js';

const bytes = (t: string) => new TextEncoder().encode(t);

/** A source that sends `chunks` one per read, then ends or fails. */
function source(chunks: string[], fail?: Error): ReadableStream<Uint8Array> {
  const left = [...chunks];
  return new ReadableStream({
    pull(c) {
      const next = left.shift();
      if (next !== undefined) c.enqueue(bytes(next));
      else if (fail) c.error(fail);
      else c.close();
    },
  });
}

describe('untilEnd', () => {
  it('passes everything on and says once when the source ended', async () => {
    const ends: (Error | undefined)[] = [];
    expect(await new Response(untilEnd(source(['a', 'b']), (e) => ends.push(e))).text()).toBe('ab');
    expect(ends).toEqual([undefined]);
  });

  it('ends cleanly when the source fails, with what was passed on, and hands the failure over', async () => {
    const ends: (Error | undefined)[] = [];
    expect(await new Response(untilEnd(source(['a'], new Error('other side closed')), (e) => ends.push(e))).text()).toBe('a');
    expect(ends.map((e) => e?.message)).toEqual(['other side closed']);
  });

  it('says so when its reader cancels, and cancels the source', async () => {
    const ends: (Error | undefined)[] = [];
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({ pull: (c) => c.enqueue(bytes('x')), cancel: () => void (cancelled = true) });
    const reader = untilEnd(endless, (e) => ends.push(e)).getReader();
    await reader.read();
    await reader.cancel();
    expect(ends).toEqual([undefined]);
    expect(cancelled).toBe(true);
  });
});
