import { describe, expect, it } from 'vitest';
import type { Logger } from '../../../src/log.js';
import { ScopeEvents } from '../../../src/fronts/proxy/scope-events.js';
import { Scopes } from '../../../src/fronts/proxy/scopes.js';

describe('ScopeEvents', () => {
  it('delivers each event once, in order, with ids that sort in that order', () => {
    const events = new ScopeEvents(10);
    const made = Array.from({ length: 5 }, (_, i) => events.add('notification', 's', { i }));
    expect([...made.map((e) => e.id)].sort()).toEqual(made.map((e) => e.id));
    expect(events.hasNew).toBe(true);
    expect(events.takeNew().events.map((e) => e.data)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }, { i: 4 }]);
    expect(events.hasNew).toBe(false);
    expect(events.takeNew()).toEqual({ events: [], missed: 0 });
    events.add('task_completed', 's', {});
    expect(events.takeNew().events.map((e) => e.type)).toEqual(['task_completed']);
    expect(events.after(made[2]!.id).map((e) => e.data)).toEqual([{ i: 3 }, { i: 4 }, {}]);
  });

  it('evicts the oldest when full, reports how many, and counts those lost before delivery', () => {
    const evicted: number[] = [];
    const events = new ScopeEvents(3, (n) => evicted.push(n));
    for (let i = 0; i < 2; i++) events.add('notification', 's', { i });
    events.takeNew();
    for (let i = 2; i < 7; i++) events.add('notification', 's', { i });
    expect(evicted).toEqual([1, 1, 1, 1]);
    const { events: got, missed } = events.takeNew();
    expect(got.map((e) => e.data)).toEqual([{ i: 4 }, { i: 5 }, { i: 6 }]);
    expect(missed).toBe(2); // 2 and 3 went before anyone saw them
  });

  it('lets an event supersede an undelivered one of the same key, never a delivered one', () => {
    const events = new ScopeEvents(10);
    events.add('notification', 's', { p: 1 }, Date.now(), 'progress:a');
    events.add('notification', 's', { other: true });
    events.add('notification', 's', { p: 2 }, Date.now(), 'progress:a');
    expect(events.takeNew().events.map((e) => e.data)).toEqual([{ other: true }, { p: 2 }]);
    events.add('notification', 's', { p: 3 }, Date.now(), 'progress:a');
    events.add('notification', 's', { p: 1 }, Date.now(), 'progress:b');
    expect(events.takeNew().events.map((e) => e.data)).toEqual([{ p: 3 }, { p: 1 }]);
  });

  it('wakes a waiter at the next event', async () => {
    const events = new ScopeEvents(3);
    const woke = events.next(new AbortController().signal);
    events.add('server_added', 'x', {});
    await expect(woke).resolves.toBeUndefined();
  });
});

describe('Scopes', () => {
  it('logs event_store_eviction when a scope evicts, keeps principals apart, and forgets idle scopes', () => {
    const lines: unknown[] = [];
    const logger = {
      warn: (o: unknown) => lines.push(o),
      info: () => undefined,
      error: () => undefined,
      debug: () => undefined,
      child: () => logger,
    } as unknown as Logger;
    const scopes = new Scopes({ maxEvents: 1, maxLogs: 5, maxNotifications: 5, idleMs: 1_000, maxWorkspacesPerPrincipal: 1, logger });
    try {
      scopes.get('alice').events.add('notification', 's', {});
      scopes.get('alice').events.add('notification', 's', {});
      expect(lines).toEqual([expect.objectContaining({ event: 'event_store_eviction', evictedCount: 1 })]);
      const ws = scopes.mintWorkspace('alice')!;
      expect(scopes.mintWorkspace('alice')).toBeUndefined();
      expect(scopes.workspace('bob', ws)).toBeUndefined();
      expect(scopes.workspace('alice', ws)).toBeDefined();
      expect(scopes.get('bob')).not.toBe(scopes.get('alice'));
      scopes.sweep(Date.now() + 2_000);
      expect(scopes.size).toBe(0);
      expect(scopes.workspace('alice', ws)).toBeUndefined(); // forgotten with its scope
    } finally {
      scopes.close();
    }
  });

  it('tells a scope made later of every server added at run time and still there, once, and nothing of removed ones', () => {
    const logger = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;
    const scopes = new Scopes({ maxEvents: 10, maxLogs: 5, maxNotifications: 5, idleMs: 60_000, maxWorkspacesPerPrincipal: 1, logger });
    try {
      const early = scopes.get('alice');
      scopes.announceAdded('a', { name: 'a' });
      scopes.announceAdded('b', { name: 'b' });
      scopes.announceRemoved('b', { name: 'b' });
      expect(early.events.takeNew().events.map((e) => [e.type, e.server])).toEqual([
        ['server_added', 'a'],
        ['server_added', 'b'],
        ['server_removed', 'b'],
      ]);
      const late = scopes.get('bob');
      expect(late.events.takeNew().events.map((e) => [e.type, e.server, e.data])).toEqual([['server_added', 'a', { name: 'a', addedBeforeScope: true }]]);
      expect(scopes.get('bob').events.hasNew).toBe(false); // the same scope again: told once
    } finally {
      scopes.close();
    }
  });
});
