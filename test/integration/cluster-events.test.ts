/**
 * Events that fan out across three instances on one real Redis: a backend's list change reaches a
 * listener on every instance once (a backend all instances share announces it to each of them; a
 * backend only one instance runs announces it there), and a listen stream on one instance follows a
 * task another instance holds, to its end or to its instance's death.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLegacyHttpServer, type LegacyHttpServer } from '../fixtures/legacy-http.js';
import { stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { startCluster } from '../helpers/cluster.js';
import { redisPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { openListen, post } from '../helpers/wire.js';

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const { prefix, cleanup } = redisPrefix();
let shared: LegacyHttpServer;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  shared = await startLegacyHttpServer('shared');
  gateways.push(
    ...(await startCluster(['a', 'b', 'c'], {
      prefix,
      mcpServers: { shared: { url: shared.url }, own: stdioFixture() },
      gateway: { tasks: { promoteAfterMs: 100 } },
    })),
  );
});
afterAll(async () => {
  for (const g of gateways) await g.close();
  await shared?.close();
  await cleanup();
});

describe('events across instances', () => {
  it('gives a listener on every instance each list change once, whichever instance saw it', async () => {
    const streams = await Promise.all(gateways.map((g, i) => openListen(g.url, 100 + i, { toolsListChanged: true })));
    const changes = (s: (typeof streams)[number]) => s.messages.filter((m) => m['method'] === 'notifications/tools/list_changed').length;
    try {
      for (const s of streams) await s.waitFor(1);
      for (const s of streams) expect(s.messages[0]).toMatchObject({ params: { notifications: { toolsListChanged: true } } });

      // The shared backend tells each of the three instances' sessions: one event, not three.
      await shared.announceToolsChanged();
      await until('the shared announcement on every instance', () => streams.every((s) => changes(s) >= 1));

      // A backend only instance A runs (its own stdio process) changes: listeners on B and C hear it too.
      const [a] = gateways;
      const called = await post(a!.url, 'tools/call', { name: 'own__trigger_tool_change' });
      expect(called.message['result']).toBeDefined();
      await until("A's own backend change on every instance", () => streams.every((s) => changes(s) >= 2));
      // One more from C's own backend (its own process: not a copy of A's, even within the window), then
      // the counts: a late copy of an earlier event would show here.
      await post(gateways[2]!.url, 'tools/call', { name: 'own__trigger_tool_change' });
      await until("C's own backend change on every instance", () => streams.every((s) => changes(s) >= 3));
      expect(streams.map(changes)).toEqual([3, 3, 3]);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('follows a task another instance holds on a listen stream, to its result', async () => {
    const [a, b] = gateways;
    const created = await post(a!.url, 'tools/call', { name: 'own__slow', arguments: { id: 'followed', ms: 600 } }, { caps: TASKS });
    const taskId = (created.message['result'] as { taskId: string }).taskId;
    expect(taskId.startsWith('a~')).toBe(true);
    const stream = await openListen(b!.url, 200, { taskIds: [taskId, 'a~unknown'] }, { caps: TASKS });
    try {
      await stream.waitFor(1);
      expect(stream.messages[0]).toMatchObject({ params: { notifications: { taskIds: [taskId] } } });
      const statuses = () => stream.messages.filter((m) => m['method'] === 'notifications/tasks').map((m) => (m['params'] as { status: string }).status);
      await until('the followed task to complete', () => statuses().includes('completed'));
      expect(statuses()).toEqual(['working', 'completed']);
      const done = stream.messages.find((m) => (m['params'] as { status?: string }).status === 'completed')!;
      expect(done).toMatchObject({
        params: { taskId, result: { resultType: 'complete', content: [{ type: 'text' }] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 200 } },
      });
    } finally {
      stream.close();
    }
  });

  it('tells a listener on another instance that a task failed when its instance went away', async () => {
    const [a, , c] = gateways;
    const created = await post(a!.url, 'tools/call', { name: 'own__slow', arguments: { id: 'orphan', ms: 60_000 } }, { caps: TASKS });
    const taskId = (created.message['result'] as { taskId: string }).taskId;
    const stream = await openListen(c!.url, 300, { taskIds: [taskId] }, { caps: TASKS });
    try {
      const tasks = () => stream.messages.filter((m) => m['method'] === 'notifications/tasks').map((m) => m['params'] as Record<string, unknown>);
      await until('the working state', () => tasks().length >= 1);
      expect(tasks()[0]).toMatchObject({ taskId, status: 'working' });
      await a!.close();
      await until('the task to end', () => tasks().some((t) => t['status'] === 'failed'));
      // Its call went with its instance (a running task is not written on the way out): failed, instance_gone.
      expect(tasks().at(-1)).toMatchObject({ taskId, status: 'failed', error: { data: { reason: 'instance_gone' } } });
    } finally {
      stream.close();
    }
  });
});
