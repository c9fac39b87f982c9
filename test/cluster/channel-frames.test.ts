/**
 * The channel's frames between instances: read back whole from any split of their bytes, bodies
 * carried as they are (no escaping: a body of quotes or line breaks is no longer in a frame than it is),
 * and refused when changed, replayed, reordered, sent the other way, under another connection's key,
 * or too long; a frame too long for the reader is not written at all.
 */
import { describe, expect, it } from 'vitest';
import { FrameError, FrameReader, FrameWriter, channelKey } from '../../src/cluster/channel-frames.js';

const key = channelKey('cluster secret', 'nonce-1', 'salt-1');

/** Frames written by the forwarding end, and a reader of them at the owner's. */
function pair(maxBytes = 1024) {
  return { writer: new FrameWriter(key, 'forwarder'), reader: new FrameReader(key, 'forwarder', maxBytes) };
}

describe('channel frames', () => {
  it('are read back in order, heads and bodies, whatever pieces their bytes arrive in', () => {
    const { writer, reader } = pair();
    const sent = [
      { head: { k: 'call', i: 1, u: 'ådå' }, body: '{"a":"\n\n\\""}' },
      { head: { k: 'cancel', i: 1 }, body: '' },
      { head: { k: 'data', i: 2 }, body: Buffer.from([0, 255, 10, 34]) },
    ];
    const bytes = Buffer.concat(sent.map((f) => writer.frame(f.head, f.body)));
    const expected = sent.map((f) => ({ head: f.head, body: Buffer.from(f.body) }));
    for (const size of [1, 3, 7, 50, bytes.length]) {
      const again = pair();
      const out: unknown[] = [];
      for (let at = 0; at < bytes.length; at += size) out.push(...again.reader.push(bytes.subarray(at, at + size)));
      expect(out).toEqual(expected);
    }
    expect(reader.push(bytes)).toEqual(expected);
  });

  it('carries a body as it is: quotes and line breaks take no more room', () => {
    const body = '"\n'.repeat(400);
    const frame = pair().writer.frame({ k: 'call', i: 1 }, body);
    expect(frame.length).toBeLessThan(body.length + 100);
    expect(pair(1000).reader.push(frame)[0]!.body.toString()).toBe(body);
  });

  it('writes nothing, and numbers nothing, for a frame longer than the bound it is given', () => {
    const { writer, reader } = pair();
    expect(writer.bounded({ k: 'call', i: 1 }, 'x'.repeat(2000), 1024)).toBeUndefined();
    const next = writer.bounded({ k: 'call', i: 2 }, 'small', 1024)!;
    expect(reader.push(next)).toEqual([{ head: { k: 'call', i: 2 }, body: Buffer.from('small') }]);
  });

  it('refuses a frame whose bytes changed on the way', () => {
    const { writer, reader } = pair();
    const frame = writer.frame({ k: 'call', i: 1, u: 'alice' });
    const changed = Buffer.from(frame.toString('latin1').replace('alice', 'bobby'), 'latin1');
    expect(() => reader.push(changed)).toThrow(FrameError);
  });

  it('refuses a frame sent again, or out of order', () => {
    const { writer, reader } = pair();
    const first = writer.frame({ k: 'call', i: 1 });
    const second = writer.frame({ k: 'call', i: 2 });
    expect(reader.push(first)).toEqual([{ head: { k: 'call', i: 1 }, body: Buffer.alloc(0) }]);
    expect(() => reader.push(first)).toThrow(/MAC/);
    expect(() => pair().reader.push(second)).toThrow(/MAC/);
  });

  it('refuses a frame sent the other way, or under another connection key', () => {
    const owner = new FrameWriter(key, 'owner');
    expect(() => pair().reader.push(owner.frame({ k: 'json', i: 1 }))).toThrow(/MAC/);
    const elsewhere = new FrameWriter(channelKey('cluster secret', 'nonce-2', 'salt-1'), 'forwarder');
    expect(() => pair().reader.push(elsewhere.frame({ k: 'call', i: 1 }))).toThrow(/MAC/);
    const otherSecret = new FrameWriter(channelKey('another secret', 'nonce-1', 'salt-1'), 'forwarder');
    expect(() => pair().reader.push(otherSecret.frame({ k: 'call', i: 1 }))).toThrow(/MAC/);
  });

  it('refuses a frame whose head is not an object with a number, though its MAC holds', () => {
    for (const head of [null, [1], { k: 'call' }, { k: 'call', i: '1' }]) {
      const frame = pair().writer.frame(head as unknown as Record<string, unknown>);
      expect(() => pair().reader.push(frame)).toThrow(/not an object with a number/);
    }
  });

  it('refuses a frame longer than allowed as soon as its length is read, before its bytes arrive', () => {
    const long = pair().writer.frame({ k: 'call', i: 1 }, 'x'.repeat(1500));
    expect(() => pair(1024).reader.push(long.subarray(0, 4))).toThrow(/a frame of \d+ bytes/);
    expect(() => pair().reader.push(Buffer.from([0, 0, 0, 3]))).toThrow(FrameError);
  });
});
