/**
 * The official tasks client, `@modelcontextprotocol/ext-tasks` (0.2.2), with its DEFAULT result decoder,
 * on the SDK v2 client over real HTTP against the real gateway and a real legacy stdio backend: a
 * promoted call to its result, an input round inside a task answered through tasks/update, a cancel,
 * a listen subscription whose notifications/tasks delivers the completed result, a resume of the
 * task by id from a second client, and, in a cluster, a resume on another instance of a task read from
 * the cluster store once its own instance stopped. The package's decoder wants what the extension says a completed
 * task's `result` is — a full 2026-07-28 result of the original request, `resultType` included.
 *
 * The package needs a host request path for the 2026-07-28 task wire (test/helpers/ext-tasks.ts).
 */
import { resultFromTaskOutcome, type SerializedTaskReference } from '@modelcontextprotocol/ext-tasks/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startCluster } from '../helpers/cluster.js';
import { TASK_CLIENT_CAPABILITIES as CAPABILITIES, taskClient as extTaskClient, type TaskClient } from '../helpers/ext-tasks.js';
import { startGateway, stdioFixture, wireViolations, type RunningGateway } from '../helpers/gateway.js';
import { redisPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const KEY = 'alice-key-0123456789abcdef';

/** A task client (test/helpers/ext-tasks.ts) as alice. */
const taskClient = (url: string, onInput?: (message: string) => Record<string, unknown>): Promise<TaskClient> =>
  extTaskClient(url, { headers: { authorization: `Bearer ${KEY}` }, ...(onInput ? { onInput } : {}) });

const textOf = (result: unknown) => ((result as { content: { type: string; text?: string }[] }).content[0] ?? {}).text;

const open: TaskClient[] = [];
async function track(c: Promise<TaskClient>): Promise<TaskClient> {
  const t = await c;
  open.push(t);
  return t;
}
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({
    mcpServers: {
      legacy: {
        ...stdioFixture(),
        isolation: 'shared',
        tasks: { tools: { slow: { promoteAfterMs: 50 }, elicit_name: { support: 'required', promoteAfterMs: 0 } } },
      },
    },
    gateway: { coalesceMs: 0, apiKeys: [{ principal: 'alice', key: KEY }], tasks: { pollIntervalMs: 100 } },
  });
});
afterAll(async () => gw?.close());

describe('the official tasks client (@modelcontextprotocol/ext-tasks) with its default decoder', () => {
  it('drives a promoted call to its result', async () => {
    const { session, polled } = await track(taskClient(gw.url));
    const execution = await session.callTool('slow', { id: 'ext-promoted', ms: 1_000 });
    expect(execution.kind).toBe('task');
    const { outcome } = await execution.settle();
    expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
    const result = resultFromTaskOutcome(outcome);
    expect(result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'finished' }] });
    // What the gateway sent: a full result of the original request, inlined in the completed task.
    expect(polled.at(-1)).toMatchObject({ resultType: 'complete', status: 'completed', result: { resultType: 'complete' } });
  });

  it('answers input inside a task through tasks/update and reads the result', async () => {
    const asked: string[] = [];
    const { session } = await track(
      taskClient(gw.url, (message) => {
        asked.push(message);
        return { action: 'accept', content: { name: 'Ada' } };
      }),
    );
    const execution = await session.callTool('elicit_name', {});
    expect(execution.kind).toBe('task');
    const { outcome } = await execution.settle();
    expect(asked).toEqual(['What is your name?']);
    expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
    expect(textOf(resultFromTaskOutcome(outcome))).toBe('Hello, Ada!');
  });

  it('cancels a working task', async () => {
    const { session } = await track(taskClient(gw.url));
    const execution = await session.callTool('slow', { id: 'ext-cancel', ms: 60_000 });
    expect(execution.kind).toBe('task');
    await execution.cancel();
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('cancelled');
    const seen = await post(gw.url, 'tasks/get', { taskId: execution.handle!.taskId }, { caps: CAPABILITIES, headers: { authorization: `Bearer ${KEY}` } });
    expect(seen.message['result']).toMatchObject({ status: 'cancelled' });
  });

  it('resumes a task from a second client by its reference and reads the result there', async () => {
    const first = await track(taskClient(gw.url));
    const execution = await first.session.callTool('slow', { id: 'ext-resumed', ms: 1_000 });
    if (execution.kind !== 'task') throw new Error('expected a task');
    let reference: SerializedTaskReference | undefined;
    await execution.handoff((r) => {
      reference = r;
    });
    expect(reference).toMatchObject({ generation: 'v2', taskId: execution.handle.taskId, originalOperation: 'tools/call' });
    // The package's session.close() cancels every execution whose driver has not wound down yet, a
    // handed-off one included; once its local outcome has settled (detached), closing leaves the task be.
    await execution.result();
    await first.close();
    open.splice(open.indexOf(first), 1);

    // A new client and session (as after a restart of the host) recover the task by its id.
    const second = await track(taskClient(gw.url));
    const resumed = await second.session.resumeTask(JSON.parse(JSON.stringify(reference)) as SerializedTaskReference);
    const { outcome } = await resumed.settle();
    expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
    expect(textOf(resultFromTaskOutcome(outcome))).toBe('finished');
  });
});

describe('the official tasks client following a task on a listen stream', () => {
  // Poll hints so long that only notifications/tasks can end the task within the test.
  let slowPolls: RunningGateway;
  beforeAll(async () => {
    slowPolls = await startGateway({
      mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared', tasks: { tools: { slow: { promoteAfterMs: 50 } } } } },
      gateway: { coalesceMs: 0, apiKeys: [{ principal: 'alice', key: KEY }], tasks: { pollIntervalMs: 600_000 } },
    });
  });
  afterAll(async () => slowPolls?.close());

  it('settles from the completed result notifications/tasks delivers', async () => {
    const { client, session, polled, notified } = await track(taskClient(slowPolls.url));
    const execution = await session.callTool('slow', { id: 'ext-listened', ms: 1_000 });
    if (execution.kind !== 'task') throw new Error('expected a task');
    const subscription = await client.listen({ taskIds: [execution.handle.taskId] } as never);
    try {
      const { outcome } = await execution.settle();
      expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
      expect(textOf(resultFromTaskOutcome(outcome))).toBe('finished');
      // It came from the stream, not from a poll.
      expect(polled.filter((t) => t['status'] === 'completed')).toEqual([]);
      const done = notified.find((n) => n['method'] === 'notifications/tasks' && (n['params'] as { status?: string }).status === 'completed');
      expect(done).toMatchObject({ params: { taskId: execution.handle.taskId, result: { resultType: 'complete', content: [{ text: 'finished' }] } } });
    } finally {
      await subscription.close();
    }
  });
});

describe('the official tasks client in a cluster', () => {
  const { prefix, cleanup } = redisPrefix();
  let x: RunningGateway | undefined;
  let y: RunningGateway | undefined;
  beforeAll(async () => {
    [x, y] = await startCluster(['x', 'y'], {
      prefix,
      mcpServers: { legacy: { ...stdioFixture(), tasks: { tools: { slow: { promoteAfterMs: 50 } } } } },
      gateway: { apiKeys: [{ principal: 'alice', key: KEY }], tasks: { pollIntervalMs: 100 } },
    });
  });
  afterAll(async () => {
    await x?.close();
    await y?.close();
    await cleanup();
  });

  it('resumes on another instance a task whose instance stopped after it finished, from the cluster store', async () => {
    const first = await taskClient(x!.url);
    const execution = await first.session.callTool('slow', { id: 'ext-stored', ms: 300 });
    if (execution.kind !== 'task') throw new Error('expected a task');
    expect(execution.handle.taskId.startsWith('x~')).toBe(true);
    let reference: SerializedTaskReference | undefined;
    await execution.handoff((r) => {
      reference = r;
    });
    await execution.result();
    await first.close();
    // Finished on X (read raw, past any decoder), then X goes: its last state is in the store.
    const auth = { caps: CAPABILITIES, headers: { authorization: `Bearer ${KEY}` } };
    const finished = async () =>
      (await post(x!.url, 'tasks/get', { taskId: execution.handle.taskId }, auth)).message['result'] as { status?: string } | undefined;
    await until('the task to finish on X', async () => (await finished())?.status === 'completed');
    await x!.close();

    const second = await track(taskClient(y!.url));
    const resumed = await second.session.resumeTask(reference!);
    const { outcome } = await resumed.settle();
    expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
    expect(textOf(resultFromTaskOutcome(outcome))).toBe('finished');
    expect(second.polled.at(-1)).toMatchObject({ taskId: execution.handle.taskId, status: 'completed', result: { resultType: 'complete' } });
  });
});

afterAll(() => {
  expect(wireViolations).toEqual([]);
});
