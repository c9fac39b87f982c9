import { describe, expect, it } from 'vitest';
import { SessionEventStore } from '../../../src/fronts/legacy/event-store.js';

const msg = (n: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { n } });

async function replay(store: SessionEventStore, after: string): Promise<{ stream: string; ids: string[] }> {
  const ids: string[] = [];
  const stream = await store.replayEventsAfter(after, { send: async (id) => void ids.push(id) });
  return { stream, ids };
}

describe('SessionEventStore', () => {
  it('replays what followed an event on its own stream only, with ids that sort in send order', async () => {
    const store = new SessionEventStore();
    const a1 = await store.storeEvent('a', msg(1));
    const b1 = await store.storeEvent('b', msg(2));
    const a2 = await store.storeEvent('a', msg(3));
    const a3 = await store.storeEvent('a', msg(4));
    expect([a1, b1, a2, a3]).toEqual([a1, b1, a2, a3].sort());
    expect(await replay(store, a1)).toEqual({ stream: 'a', ids: [a2, a3] });
    expect(await replay(store, b1)).toEqual({ stream: 'b', ids: [] });
    expect(await store.getStreamIdForEventId(a2)).toBe('a');
    await expect(replay(store, 'garbage')).rejects.toThrow();
    await expect(replay(store, '000000000001.unknown')).rejects.toThrow();
  });

  it('keeps a bounded log and refuses to resume from an event it no longer holds', async () => {
    const store = new SessionEventStore({ perStream: 3, streams: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await store.storeEvent('s', msg(i)));
    await expect(replay(store, ids[0]!)).rejects.toThrow(/too old/);
    expect((await replay(store, ids[3]!)).ids).toEqual([ids[4], ids[5]]);
    await store.storeEvent('t', msg(7));
    await store.storeEvent('u', msg(8)); // a third stream: the oldest stream goes
    expect(await store.getStreamIdForEventId(ids[5]!)).toBeUndefined();
  });

  it('resumes after the newest dropped event of a stream even when other streams took sequence numbers in between', async () => {
    const store = new SessionEventStore({ perStream: 2 });
    const a1 = await store.storeEvent('a', msg(1));
    await store.storeEvent('b', msg(2));
    const a2 = await store.storeEvent('a', msg(3));
    await store.storeEvent('b', msg(4));
    const a3 = await store.storeEvent('a', msg(5)); // a1 is dropped; a2 and a3, all that followed it, are kept
    expect(store.resumable(a1)).toEqual({ ok: true });
    expect(await replay(store, a1)).toEqual({ stream: 'a', ids: [a2, a3] });
    await store.storeEvent('a', msg(6)); // a2 is dropped now: after a1, a2 is missing
    expect(store.resumable(a1)).toEqual({ ok: false, why: 'too_old' });
  });

  it('tells an event too old to resume from apart from an id it never gave', async () => {
    const store = new SessionEventStore({ perStream: 3, streams: 1 });
    const first = await store.storeEvent('s', msg(1));
    for (let i = 0; i < 4; i++) await store.storeEvent('s', msg(i)); // `first` and the one after it are dropped
    expect(store.resumable(first)).toEqual({ ok: false, why: 'too_old' });
    const t1 = await store.storeEvent('t', msg(9)); // stream s goes as a whole
    expect(store.resumable(first)).toEqual({ ok: false, why: 'too_old' });
    expect(store.resumable(t1)).toEqual({ ok: true });
    expect(store.resumable('999999999999.t')).toEqual({ ok: false, why: 'unknown' });
    expect(store.resumable('000000000001.never')).toEqual({ ok: false, why: 'unknown' });
    expect(store.resumable('garbage')).toEqual({ ok: false, why: 'unknown' });
  });

  it('keeps at most maxChars characters of messages: the oldest other streams go first, and a stream alone over it keeps its newest event', async () => {
    const big = (n: number, fill = 'x') => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { data: fill.repeat(n) } });
    const one = JSON.stringify(big(100)).length;
    const store = new SessionEventStore({ maxChars: 3 * one });
    const a1 = await store.storeEvent('a', big(100));
    const b1 = await store.storeEvent('b', big(100));
    const c1 = await store.storeEvent('c', big(100));
    expect(await store.getStreamIdForEventId(a1)).toBe('a'); // three fit
    const d1 = await store.storeEvent('d', big(100)); // a fourth does not: the oldest stream goes
    expect(await store.getStreamIdForEventId(a1)).toBeUndefined();
    expect(store.resumable(a1)).toEqual({ ok: false, why: 'too_old' });
    for (const id of [b1, c1, d1]) expect(store.resumable(id)).toEqual({ ok: true });
    // One event larger than the whole budget: every other stream goes, and it stays.
    const e1 = await store.storeEvent('e', big(10 * one, 'y'));
    for (const id of [b1, c1, d1]) expect(await store.getStreamIdForEventId(id)).toBeUndefined();
    const e2 = await store.storeEvent('e', big(10 * one, 'z')); // its stream alone over it: only its newest is kept
    expect(store.resumable(e1)).toEqual({ ok: true }); // all after e1 (e2) is kept
    const replayed: unknown[] = [];
    await store.replayEventsAfter(e1, { send: async (_id, message) => void replayed.push(message) });
    expect(replayed).toEqual([big(10 * one, 'z')]);
    await store.storeEvent('e', big(1));
    expect(store.resumable(e1)).toEqual({ ok: false, why: 'too_old' }); // e2 went to make room
    expect(await replay(store, e2)).toMatchObject({ stream: 'e', ids: [expect.any(String)] });
  });
});
