import { describe, expect, it } from 'vitest';
import { InMemoryQuotas } from '../../../src/cluster/quotas.js';
import type { BackendOutcome } from '../../../src/core/backend/port.js';
import { Call } from '../../../src/core/calls/call.js';
import { GatewayError } from '../../../src/errors.js';
import type { StoredTask, TaskStore } from '../../../src/cluster/task-store.js';
import { TaskRegistry, instanceOfTaskId } from '../../../src/fronts/tasks/registry.js';
import { createDeferred } from '../../../src/util/deferred.js';
import { ManualClock } from '../../helpers/manual-clock.js';

const settings = { ttlMs: 60_000, retentionMs: 10_000, pollIntervalMs: 500, maxPerPrincipal: 2, maxTotal: 3 };

/** A call whose backend answers when the test says so. */
function runningCall(id: string) {
  const backend = createDeferred<BackendOutcome>();
  const call = new Call({
    id,
    principal: 'alice',
    method: 'tools/call',
    backend: 'b',
    caps: { elicitation: { form: true, url: false }, sampling: { tools: false, context: false }, roots: false } as never,
  });
  call.run(() => backend.promise);
  return { call, finish: (text: string) => backend.resolve({ kind: 'complete', result: { content: [{ type: 'text', text }] } }) };
}

const settle = () => new Promise((r) => setImmediate(r));

function setup() {
  const clock = new ManualClock(1_700_000_000_000);
  const quotas = new InMemoryQuotas();
  const registry = new TaskRegistry({ instanceId: 'gw-1', clock, quotas, settings });
  return { clock, quotas, registry };
}

describe('TaskRegistry', () => {
  it("bounds a task's waits for input by inputTimeoutMs only when it is shorter than the ttl (no timer past it: one past 2^31 - 1 ms fires at once)", async () => {
    const { registry, clock } = setup();
    const scheduled: number[] = [];
    const schedule = clock.schedule.bind(clock);
    clock.schedule = (fn, ms) => (scheduled.push(ms), schedule(fn, ms));
    const asking = async (inputTimeoutMs: number) => {
      const { call } = runningCall(`c-${inputTimeoutMs}`);
      const task = await registry.create(call, 'alice', { inputTimeoutMs });
      call
        .requestInput('elicitation/create', { message: 'name?', requestedSchema: { type: 'object', properties: {} } }, new AbortController().signal)
        .catch(() => undefined);
      await settle();
      return task;
    };
    const long = await asking(3_000_000_000);
    expect(scheduled).toEqual([settings.ttlMs]); // the ttl's timer alone
    const short = await asking(1_000);
    expect(scheduled).toEqual([settings.ttlMs, settings.ttlMs, 1_000]);
    clock.advance(1_000);
    expect(registry.snapshot(short).status).toBe('failed');
    expect(registry.snapshot(long).status).toBe('input_required');
    registry.cancel(long);
  });

  it('hands out unguessable ids that name the instance, and shows a task to its owner only', async () => {
    const { registry } = setup();
    const a = await registry.create(runningCall('c1').call, 'alice');
    const b = await registry.create(runningCall('c2').call, 'alice');
    expect(a.id).not.toBe(b.id);
    expect(instanceOfTaskId(a.id)).toBe('gw-1');
    expect(a.id.length).toBeGreaterThan(20);
    expect(registry.get(a.id, 'alice')).toBe(a);
    expect(registry.get(a.id, 'bob')).toBeUndefined();
    expect(registry.get('gw-1~nope', 'alice')).toBeUndefined();
  });

  it("says a task id of an earlier run or another instance names a lost task; any other is unknown, expired, or not the caller's", async () => {
    const { registry, clock } = setup();
    // Each run its own quotas (the shared one would refuse a third task for alice).
    const restarted = new TaskRegistry({ instanceId: 'gw-1', clock, quotas: new InMemoryQuotas(), settings });
    const other = new TaskRegistry({ instanceId: 'gw-2', clock, quotas: new InMemoryQuotas(), settings });
    const before = await registry.create(runningCall('c1').call, 'alice');
    const elsewhere = await other.create(runningCall('c2').call, 'alice');
    const mine = await restarted.create(runningCall('c3').call, 'alice');
    const reasonOf = (e: unknown) => ((e as { data?: Record<string, unknown> }).data ?? {})['reason'];
    expect(restarted.notFound(before.id).message).toMatch(
      /earlier run of this gateway instance \(it restarted since\); it is gone, with its result if it had one/,
    );
    expect(reasonOf(restarted.notFound(before.id))).toBe('task_lost');
    expect(restarted.notFound(elsewhere.id).message).toMatch(/held by gateway instance gw-2, which no longer holds it/);
    expect(reasonOf(restarted.notFound(elsewhere.id))).toBe('task_lost');
    for (const id of [`${mine.id.slice(0, -22)}${'A'.repeat(22)}`, 'gw-1~nope', 'nope', 'r~abc']) {
      expect(restarted.notFound(id).message).toMatch(/\(unknown, expired, or not yours\)$/);
      expect(reasonOf(restarted.notFound(id))).toBeUndefined();
    }
    expect(restarted.notFound('x'.repeat(1_000)).message.length).toBeLessThan(300);
  });

  it('counts the tasks a client polls without having seen their end, while it keeps polling (awaitedReads: what a drain waits for)', async () => {
    const { registry, clock } = setup();
    const polled = runningCall('c1');
    const a = await registry.create(polled.call, 'alice');
    const b = await registry.create(runningCall('c2').call, 'alice');
    expect(registry.awaitedReads()).toBe(0); // nobody polls either
    expect(registry.snapshot(a).status).toBe('working'); // the gateway's own look is not a client's read
    expect(registry.awaitedReads()).toBe(0);
    expect(registry.read(a).status).toBe('working');
    expect(registry.awaitedReads()).toBe(1);
    polled.finish('done');
    await settle();
    expect(registry.awaitedReads()).toBe(1); // ended, not seen ended
    expect(registry.read(a)).toMatchObject({ status: 'completed' });
    expect(registry.awaitedReads()).toBe(0);
    // A client that stops polling (three poll intervals of 500 ms without a read) no longer counts.
    registry.read(b);
    clock.advance(1_500);
    expect(registry.awaitedReads()).toBe(1);
    clock.advance(1);
    expect(registry.awaitedReads()).toBe(0);
  });

  it('reads status from the call: working, input_required with keys, completed with the result', async () => {
    const { registry, clock } = setup();
    const { call, finish } = runningCall('c1');
    const task = await registry.create(call, 'alice');
    const first = registry.snapshot(task);
    expect(first).toMatchObject({ status: 'working', ttlMs: 60_000, pollIntervalMs: 500, createdAt: clock.now() });
    const answer = call.requestInput(
      'elicitation/create',
      { message: 'Name?', requestedSchema: { type: 'object', properties: {} } },
      new AbortController().signal,
    );
    clock.advance(1_000);
    const waiting = registry.snapshot(task);
    expect(waiting.status).toBe('input_required');
    const [key] = Object.keys(waiting.inputRequests ?? {});
    expect(waiting.inputRequests?.[key!]).toMatchObject({ method: 'elicitation/create' });
    expect(waiting.lastUpdatedAt).toBeGreaterThanOrEqual(first.lastUpdatedAt);
    call.answer({ [key!]: { action: 'accept', content: {} } });
    await expect(answer).resolves.toMatchObject({ action: 'accept' });
    expect(registry.snapshot(task).status).toBe('working');
    finish('done');
    await settle();
    expect(registry.snapshot(task)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } });
  });

  it('bounds tasks per principal and in total, and gives the quota back when a task ends', async () => {
    const { registry } = setup();
    const one = runningCall('c1');
    await registry.create(one.call, 'alice');
    await registry.create(runningCall('c2').call, 'alice');
    await expect(registry.create(runningCall('c3').call, 'alice')).rejects.toMatchObject({ code: 'task_limit' });
    await registry.create(runningCall('c4').call, 'bob');
    await expect(registry.create(runningCall('c5').call, 'carol')).rejects.toMatchObject({ code: 'task_limit' });
    one.finish('ok');
    await settle();
    await expect(registry.create(runningCall('c6').call, 'alice')).resolves.toBeDefined();
  });

  it('cancels a task past its ttl, keeps finished tasks for the retention period, then forgets them', async () => {
    const { registry, clock } = setup();
    const slow = runningCall('slow');
    const quick = runningCall('quick');
    const s = await registry.create(slow.call, 'alice');
    const q = await registry.create(quick.call, 'alice');
    clock.advance(59_000);
    quick.finish('ok');
    await settle();
    clock.advance(1_000); // the ttl passes: the slow call is cancelled, the quick one is kept
    expect(slow.call.status).toBe('cancelled');
    expect(registry.snapshot(s)).toMatchObject({ status: 'failed', error: { code: -32603 } });
    expect(registry.get(q.id, 'alice')).toBeDefined();
    clock.advance(8_000);
    expect(registry.get(q.id, 'alice')).toBeDefined(); // 10 s of retention after it ended at 59 s
    clock.advance(1_000);
    expect(registry.get(q.id, 'alice')).toBeUndefined();
    expect(registry.get(s.id, 'alice')).toBeDefined(); // retained until 60 s + 10 s
    clock.advance(1_000);
    expect(registry.get(s.id, 'alice')).toBeUndefined();
    expect(registry.size).toBe(0);
  });

  it('maps cancel to cancelled and backend errors to failed with the JSON-RPC error', async () => {
    const { registry } = setup();
    const a = runningCall('a');
    const ta = await registry.create(a.call, 'alice');
    registry.cancel(ta);
    registry.cancel(ta);
    expect(registry.snapshot(ta).status).toBe('cancelled');
    const failing = new Call({ id: 'f', principal: 'alice', method: 'tools/call', backend: 'b', caps: {} as never });
    failing.run(() => Promise.reject(Object.assign(new Error('MCP error -32603: boom'), { code: -32603 })));
    const tf = await registry.create(failing, 'alice');
    await settle();
    expect(registry.snapshot(tf)).toMatchObject({ status: 'failed', error: { code: -32603, message: 'boom' } });
    await registry.close();
    expect(registry.size).toBe(0);
    await expect(registry.create(runningCall('z').call, 'alice')).rejects.toBeInstanceOf(GatewayError);
  });
});

describe('TaskRegistry retention bound', () => {
  it('forgets the oldest finished tasks early once a principal holds more than 4 × its running bound', async () => {
    const { registry } = setup(); // maxPerPrincipal 2 → at most 8 finished tasks kept for alice
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = runningCall(`c${i}`);
      const t = await registry.create(r.call, 'alice');
      ids.push(t.id);
      r.finish(`done ${i}`);
      await settle();
    }
    expect(registry.get(ids[0]!, 'alice')).toBeUndefined();
    expect(registry.get(ids[1]!, 'alice')).toBeUndefined();
    for (const id of ids.slice(2)) expect(registry.get(id, 'alice')).toBeDefined();
    expect(registry.size).toBe(8);
  });

  it('keeps a finished task whose last write to the cluster store failed while the bound forgets others, and writes it when Redis is back', async () => {
    const saved = new Map<string, StoredTask>();
    let down = false;
    const store: TaskStore = {
      save: async (id, task) => {
        if (down) throw new Error('redis unreachable');
        saved.set(id, task);
      },
      load: async (id) => saved.get(id),
      watch: async () => async () => undefined,
    };
    const registry = new TaskRegistry({
      instanceId: 'gw-1',
      clock: new ManualClock(1_700_000_000_000),
      quotas: new InMemoryQuotas(),
      settings,
      store,
      onStoreError: () => undefined,
    });
    const first = runningCall('c0');
    const unwritten = await registry.create(first.call, 'alice');
    await settle();
    down = true;
    first.finish('done while Redis was away');
    await settle();
    expect(saved.get(unwritten.id)?.snapshot).toMatchObject({ status: 'working' });
    down = false;
    const ids: string[] = [];
    for (let i = 1; i < 10; i++) {
      const r = runningCall(`c${i}`);
      ids.push((await registry.create(r.call, 'alice')).id);
      r.finish(`done ${i}`);
      await settle();
    }
    // 10 finished, 8 kept: the two oldest written ones go, not the one the store holds as working
    expect(registry.get(unwritten.id, 'alice')).toBeDefined();
    expect(ids.slice(0, 2).map((id) => registry.get(id, 'alice'))).toEqual([undefined, undefined]);
    await registry.rewrite();
    expect(saved.get(unwritten.id)?.snapshot).toMatchObject({ status: 'completed' });
  });
});
