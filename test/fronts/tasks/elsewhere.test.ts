/** Following a task another instance holds, over an in-memory task store (the Redis one is tested in test/cluster). */
import { describe, expect, it } from 'vitest';
import type { StoredTask, TaskStore } from '../../../src/cluster/task-store.js';
import { createTasksElsewhere } from '../../../src/fronts/tasks/elsewhere.js';
import type { TaskSnapshot } from '../../../src/protocol/rev-2026-07-28/tasks.js';
import { until } from '../../helpers/until.js';

function memoryStore(): TaskStore & { announce(id: string, task: StoredTask): void } {
  const tasks = new Map<string, StoredTask>();
  const watchers = new Map<string, Set<(t: StoredTask) => void>>();
  return {
    async save(id, task) {
      tasks.set(id, task);
      watchers.get(id)?.forEach((w) => w(task));
    },
    async load(id) {
      return tasks.get(id);
    },
    async watch(id, listener) {
      if (!watchers.has(id)) watchers.set(id, new Set());
      watchers.get(id)!.add(listener);
      return async () => void watchers.get(id)?.delete(listener);
    },
    /** An announcement that arrives late (no write). */
    announce: (id, task) => watchers.get(id)?.forEach((w) => w(task)),
  };
}

const snap = (status: string, extra: Record<string, unknown> = {}) => ({ taskId: 'a~1', status, ...extra }) as unknown as TaskSnapshot;
const stored = (status: string, revision: number, principal = 'p'): StoredTask => ({ principal, instance: 'a', revision, snapshot: snap(status) as never });

describe('createTasksElsewhere', () => {
  it('sends each visible change once, drops a write older than one it has sent, and ends with the task', async () => {
    const store = memoryStore();
    let alive = true;
    const elsewhere = createTasksElsewhere({ store, instanceId: 'b', alive: async () => alive, checkEveryMs: 10 });
    await store.save('a~1', stored('working', 1), 60_000);
    const sent: string[] = [];
    const following = elsewhere.follow('a~1', 'p', new AbortController().signal, (s) => sent.push(s.status));
    await until('the first snapshot', () => sent.length >= 1);
    await store.save('a~1', stored('input_required', 2), 60_000);
    store.announce('a~1', stored('working', 1)); // crossed with the newer write: dropped
    store.announce('a~1', stored('input_required', 2, 'someone-else')); // not the caller's: ignored
    await store.save('a~1', stored('completed', 3), 60_000);
    await following;
    expect(sent).toEqual(['working', 'input_required', 'completed']);
    alive = false;
    expect(await elsewhere.load('a~1', 'other')).toBeUndefined();
    expect(await elsewhere.gone('a~1', 'p')).toMatchObject({ status: 'completed' });
  });

  it('reports a running task failed (instance_gone) once its owner is gone, and nothing for its own or unknown ids', async () => {
    const store = memoryStore();
    let alive = true;
    const elsewhere = createTasksElsewhere({ store, instanceId: 'b', alive: async () => alive, checkEveryMs: 10 });
    await store.save('a~1', stored('working', 1), 60_000);
    // Its owner lives: asked here, the owner could not be reached, and the state cannot be told (not "not found").
    await expect(elsewhere.gone('a~1', 'p')).rejects.toMatchObject({ code: 'instance_unreachable' });
    expect(await elsewhere.gone('a~1', 'someone else')).toBeUndefined();
    const sent: TaskSnapshot[] = [];
    const following = elsewhere.follow('a~1', 'p', new AbortController().signal, (s) => sent.push(s));
    await until('the first snapshot', () => sent.length >= 1);
    alive = false;
    await following;
    expect(sent.map((s) => s.status)).toEqual(['working', 'failed']);
    expect(sent[1]).toMatchObject({ error: { data: { reason: 'instance_gone' } } });
    expect(await elsewhere.load('b~1', 'p')).toBeUndefined();
    expect(await elsewhere.load('nope', 'p')).toBeUndefined();
  });

  it("answers this instance's own task its memory no longer holds from the store: finished as it ended, running as gone with an earlier run", async () => {
    const store = memoryStore();
    const elsewhere = createTasksElsewhere({ store, instanceId: 'a', alive: async () => true, checkEveryMs: 10 });
    await store.save('a~1', stored('completed', 3), 60_000); // forgotten early by the bound on finished tasks kept
    expect(await elsewhere.gone('a~1', 'p')).toMatchObject({ status: 'completed' });
    await store.save('a~1', stored('working', 1), 60_000); // held by a run of this instance before a restart
    expect(await elsewhere.gone('a~1', 'p')).toMatchObject({ status: 'failed', error: { data: { reason: 'instance_gone' } } });
    expect(await elsewhere.gone('a~1', 'someone else')).toBeUndefined();
    // Followed (a listen stream), it is sent once, as it stands: it no longer changes.
    const sent: string[] = [];
    await elsewhere.follow('a~1', 'p', new AbortController().signal, (s) => sent.push(s.status));
    expect(sent).toEqual(['failed']);
  });

  it('stops following when its signal aborts', async () => {
    const store = memoryStore();
    const elsewhere = createTasksElsewhere({ store, instanceId: 'b', alive: async () => true, checkEveryMs: 10 });
    await store.save('a~1', stored('working', 1), 60_000);
    const ac = new AbortController();
    const sent: string[] = [];
    const following = elsewhere.follow('a~1', 'p', ac.signal, (s) => sent.push(s.status));
    await until('the first snapshot', () => sent.length >= 1);
    ac.abort();
    await following;
    await store.save('a~1', stored('completed', 2), 60_000);
    expect(sent).toEqual(['working']);
  });
});
