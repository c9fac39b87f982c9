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
});
