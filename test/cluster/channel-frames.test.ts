/**
 * The channel's frames between instances: read back whole from any split of their bytes, and refused
 * when changed, replayed, reordered, sent the other way, under another connection's key, or too long.
 */
import { describe, expect, it } from 'vitest';
import { FrameError, FrameReader, FrameWriter, channelKey } from '../../src/cluster/channel-frames.js';

const key = channelKey('cluster secret', 'nonce-1', 'salt-1');

/** Frames written by the forwarding end, and a reader of them at the owner's. */
function pair(maxBytes = 1024) {
  return { writer: new FrameWriter(key, 'forwarder'), reader: new FrameReader(key, 'forwarder', maxBytes) };
}

describe('channel frames', () => {
  it('are read back in order, whatever pieces their bytes arrive in', () => {
    const { writer, reader } = pair();
    const messages = [
      { k: 'call', i: 1, b: 'é'.repeat(40) },
      { k: 'cancel', i: 1 },
      { k: 'call', i: 2, b: '' },
    ];
    const bytes = Buffer.concat(messages.map((m) => writer.frame(m)));
    for (const size of [1, 3, 7, 50, bytes.length]) {
      const again = pair();
      const out: unknown[] = [];
      for (let at = 0; at < bytes.length; at += size) out.push(...again.reader.push(bytes.subarray(at, at + size)));
      expect(out).toEqual(messages);
    }
    expect(reader.push(bytes)).toEqual(messages);
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
    expect(reader.push(first)).toEqual([{ k: 'call', i: 1 }]);
    expect(() => reader.push(first)).toThrow(/MAC/);
    const other = pair();
    expect(() => other.reader.push(second)).toThrow(/MAC/);
  });

  it('refuses a frame sent the other way, or under another connection key', () => {
    const owner = new FrameWriter(key, 'owner');
    expect(() => pair().reader.push(owner.frame({ k: 'json', i: 1 }))).toThrow(/MAC/);
    const elsewhere = new FrameWriter(channelKey('cluster secret', 'nonce-2', 'salt-1'), 'forwarder');
    expect(() => pair().reader.push(elsewhere.frame({ k: 'call', i: 1 }))).toThrow(/MAC/);
    const otherSecret = new FrameWriter(channelKey('another secret', 'nonce-1', 'salt-1'), 'forwarder');
    expect(() => pair().reader.push(otherSecret.frame({ k: 'call', i: 1 }))).toThrow(/MAC/);
  });

  it('refuses a frame longer than allowed as soon as its length is read, before its bytes arrive', () => {
    const { writer } = pair(2048);
    const long = writer.frame({ b: 'x'.repeat(1500) });
    expect(() => pair(1024).reader.push(long.subarray(0, 4))).toThrow(/a frame of \d+ bytes/);
    expect(() => pair().reader.push(Buffer.from([0, 0, 0, 3]))).toThrow(FrameError);
  });
});
