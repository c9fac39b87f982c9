/**
 * The `notification` event covers what a scope's backend calls send besides list changes (seed 000,
 * category 1: "MCP notifications from final servers"): progress, resource updates, and log lines at or
 * above a level (`gateway.proxyTools.logEventLevel`, `warning` by default, or the request's own
 * `logLevel`); every log line stays readable through `get_logs`. And a task past its ttl ends
 * `expired` (seed 001), which `list_tasks` can filter on. Real gateway, the legacy fixture over stdio,
 * real HTTP; two principals, so none sees the other's notifications.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { eventOf, proxyCaller, type ProxyEvent, type ToolCaller } from '../helpers/proxy-tools.js';
import { post } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
let gw: RunningGateway;
let alice: ToolCaller;
let bob: ToolCaller;

beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: stdioFixture() },
    gateway: {
      tasks: { ttlMs: 1_000 },
      apiKeys: [
        { principal: 'alice', key: ALICE },
        { principal: 'bob', key: BOB },
      ],
      proxyTools: { enabled: true },
    },
  });
  alice = proxyCaller(gw.url, ALICE);
  bob = proxyCaller(gw.url, BOB);
});
afterAll(async () => gw?.close());

/** The `notification` events of `method` delivered to `call` so far. */
const notifications = (call: ToolCaller, method: string): ProxyEvent[] => call.seen.filter((e) => e.type === 'notification' && e.data['method'] === method);

describe('backend notifications as proxy-tool events', () => {
  it("reports a call's progress (the newest of what was not delivered yet), and keeps every step for get_notifications", async () => {
    const r = await alice('execute_tool', { server: 'legacy', tool: 'progress', arguments: { steps: 3, gapMs: 0 } });
    expect(r.body).toEqual({ result: { content: [{ type: 'text', text: 'done 3' }] } });
    await eventOf(alice, 'notification', (e) => e.data['method'] === 'notifications/progress' && (e.data['params'] as { progress: number }).progress === 3);
    const delivered = notifications(alice, 'notifications/progress').map((e) => e.data['params'] as { progress: number });
    expect(delivered.at(-1)).toEqual({ progress: 3, total: 3, message: 'step 3' });
    expect(delivered.map((p) => p.progress)).toEqual([...delivered.map((p) => p.progress)].sort()); // in order, none twice
    const kept = (await alice('get_notifications', { server: 'legacy' })).body['notifications'] as { method: string; params: unknown }[];
    expect(kept.filter((n) => n.method === 'notifications/progress').map((n) => n.params)).toEqual([
      { progress: 1, total: 3, message: 'step 1' },
      { progress: 2, total: 3, message: 'step 2' },
      { progress: 3, total: 3, message: 'step 3' },
    ]);
    expect(notifications(bob, 'notifications/progress')).toEqual([]);
  });

  it('reports a resource update the backend sent during a call, to that scope only, and keeps it for get_notifications', async () => {
    await bob('get_logs'); // Bob's scope exists: it could be told, and must not be
    await alice('execute_tool', { server: 'legacy', tool: 'touch_resource', arguments: { uri: 'test://static' } });
    const [update] = (await eventOf(alice, 'notification', (e) => e.data['method'] === 'notifications/resources/updated')).slice(-1);
    expect(update).toMatchObject({ server: 'legacy', data: { params: { uri: 'test://static' } } });
    expect((await alice('get_notifications', { server: 'legacy' })).body['notifications']).toEqual(
      expect.arrayContaining([expect.objectContaining({ method: 'notifications/resources/updated', params: { uri: 'test://static' } })]),
    );
    await bob('await_activity', { timeout_ms: 0 });
    expect(notifications(bob, 'notifications/resources/updated')).toEqual([]);
    expect((await bob('get_notifications')).body['notifications']).not.toEqual(
      expect.arrayContaining([expect.objectContaining({ method: 'notifications/resources/updated' })]),
    );
  });

  it('makes log lines at warning and above events by default; get_logs keeps every line', async () => {
    await alice('execute_tool', { server: 'legacy', tool: 'logs' });
    await eventOf(alice, 'notification', (e) => e.data['method'] === 'notifications/message');
    await alice('await_activity', { timeout_ms: 0 }); // nothing further is on its way: the call has ended
    expect(notifications(alice, 'notifications/message').map((e) => (e.data['params'] as { level: string }).level)).toEqual(['error']);
    const logs = (await alice('get_logs', { server: 'legacy' })).body['logs'] as { message: string }[];
    expect(logs.map((l) => l.message)).toEqual(expect.arrayContaining(['log debug', 'log info', 'log error']));
  });

  it("follows the request's own logLevel for the work it starts", async () => {
    const before = notifications(bob, 'notifications/message').length;
    await bob('execute_tool', { server: 'legacy', tool: 'logs' }, { meta: { 'io.modelcontextprotocol/logLevel': 'info' } });
    await eventOf(bob, 'notification', (e) => e.data['method'] === 'notifications/message' && (e.data['params'] as { level: string }).level === 'error');
    const levels = notifications(bob, 'notifications/message')
      .slice(before)
      .map((e) => (e.data['params'] as { level: string }).level);
    expect(levels).toEqual(['info', 'error']);
  });
});

describe('a task past its ttl', () => {
  it('ends expired (task_expired), and list_tasks filters on it', async () => {
    const started = await alice('execute_tool', { server: 'legacy', tool: 'slow', arguments: { id: 'ttl-1', ms: 30_000 }, timeout_ms: 20 });
    const taskId = (started.body['task'] as { taskId: string; ttl: number }).taskId;
    expect(started.body['task']).toMatchObject({ status: 'working', ttl: 1_000 });
    expect((await eventOf(alice, 'task_expired', (e) => e.data['taskId'] === taskId)).at(-1)).toMatchObject({ data: { toolName: 'slow' } });
    expect((await alice('get_task', { taskId })).body).toMatchObject({ task: { taskId, status: 'expired' } });
    expect((await alice('get_task_result', { taskId })).body).toMatchObject({ status: 'expired', error: { data: { reason: 'task_expired' } } });
    const expired = (await alice('list_tasks', { status: 'expired' })).body['tasks'] as { taskId: string }[];
    expect(expired.map((t) => t.taskId)).toContain(taskId);
    expect(((await alice('list_tasks', { status: 'failed' })).body['tasks'] as { taskId: string }[]).map((t) => t.taskId)).not.toContain(taskId);
    // The tasks extension knows no such status: there the same task is failed, with the reason.
    const viaExtension = await post(
      gw.url,
      'tasks/get',
      { taskId },
      { caps: { extensions: { 'io.modelcontextprotocol/tasks': {} } }, headers: { authorization: `Bearer ${ALICE}` } },
    );
    expect(viaExtension.message['result']).toMatchObject({ taskId, status: 'failed' });
  });
});
