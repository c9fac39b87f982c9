/** The cluster event bus over a fan-out (an in-memory one here; the Redis one is tested in test/cluster). */
import { describe, expect, it } from 'vitest';
import type { Fanout, FanoutMessage } from '../../src/cluster/fanout.js';
import { clusterEventBus } from '../../src/core/cluster-events.js';
import { createEventBus } from '../../src/core/events.js';

/** Delivers synchronously to its listeners; `failing` makes publish reject (Redis away). */
function memoryFanout(failing = false): Fanout & { sent: FanoutMessage[]; onceKeys: (string | undefined)[]; inject(m: FanoutMessage): void } {
  const listeners = new Set<(m: FanoutMessage) => void>();
  const sent: FanoutMessage[] = [];
  const onceKeys: (string | undefined)[] = [];
  return {
    sent,
    onceKeys,
    inject: (m) => listeners.forEach((l) => l(m)),
    async publish(m, once) {
      if (failing) throw new Error('redis away');
      sent.push(m);
      onceKeys.push(once?.key);
      listeners.forEach((l) => l(m));
      return true;
    },
    async listen(l) {
      listeners.add(l);
      return async () => void listeners.delete(l);
    },
  };
}

describe('clusterEventBus', () => {
  it('sends announcements through the fan-out and delivers what any instance sent, once', async () => {
    const fanout = memoryFanout();
    const errors: Error[] = [];
    const bus = await clusterEventBus(createEventBus(), fanout, { windowMs: 1_000, sameOnEveryInstance: (b) => b === 'x', onError: (e) => errors.push(e) });
    const heard: string[] = [];
    bus.onListChanged((kind, backend) => heard.push(`${backend}:${kind}`));
    bus.onResourceUpdated((uri, backend) => heard.push(`${backend}:${uri}`));
    bus.onConnection((change, backend) => heard.push(`${backend}:${change}`));
    bus.emitListChanged('tools', 'x');
    bus.emitResourceUpdated('file:///a', 'x');
    await Promise.resolve();
    fanout.inject({ t: 'list', kind: 'prompts', backend: 'y' }); // from another instance
    fanout.inject({ t: 'list', kind: 'nonsense', backend: 'y' }); // not ours: ignored
    fanout.inject({ t: 'resource', backend: 7 });
    bus.emitConnection('lost', 'x'); // a link of this instance: stays here
    expect(heard).toEqual(['x:tools', 'x:file:///a', 'y:prompts', 'x:lost']);
    heard.length = 0;
    bus.emitListChanged('tools', 'own'); // a backend this instance runs itself: its own event, no once
    expect(fanout.sent.map((m) => m['t'])).toEqual(['list', 'resource', 'list']);
    expect(fanout.onceKeys).toEqual(['list:x:tools', expect.stringMatching(/^resource:x:[0-9a-f]{64}$/), undefined]);
    expect(errors).toEqual([]);
    bus.close();
  });

  it('still delivers here when the fan-out cannot send', async () => {
    const errors: Error[] = [];
    const bus = await clusterEventBus(createEventBus(), memoryFanout(true), {
      windowMs: 1_000,
      sameOnEveryInstance: () => true,
      onError: (e) => errors.push(e),
    });
    const heard: string[] = [];
    bus.onListChanged((kind, backend) => heard.push(`${backend}:${kind}`));
    bus.emitListChanged('tools', 'x');
    await new Promise((r) => setImmediate(r));
    expect(heard).toEqual(['x:tools']);
    expect(errors.map((e) => e.message)).toEqual(['redis away']);
    bus.close();
  });
});
