/**
 * A task whose instance cannot be reached, and is not known gone (its heartbeat still current: a
 * frozen or cut-off instance, or one that died a moment ago): another instance answers
 * `instance_unreachable` (retry), never "Task not found", which would make a client give up on work
 * that may still be running. And an instance that has closed answers `gateway_closing` for its tasks.
 */
import { describe, expect, it } from 'vitest';
import { twoInstances } from '../helpers/cluster.js';
import { inProcess, post } from '../helpers/wire.js';

const CAPS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const cluster = twoInstances({ tasks: { promoteAfterMs: 100 } });

describe('a task of an instance that cannot be reached', () => {
  it('is told instance_unreachable by the others while the owner is not known gone, and gateway_closing by the owner once it closed', async () => {
    const { a, b } = cluster;
    const created = await post(a.url, 'tools/call', { name: 'slow', arguments: { id: 'unreachable-task', ms: 60_000 } }, { caps: CAPS });
    const taskId = (created.message['result'] as { taskId: string }).taskId;
    expect(taskId.startsWith('a~')).toBe(true);
    expect((await post(b.url, 'tasks/get', { taskId }, { caps: CAPS })).message['result']).toMatchObject({ status: 'working' });
    // a stops taking connections, but goes on beating: b cannot reach it, and does not take it for gone.
    a.cutOff();
    const asked = await post(b.url, 'tasks/get', { taskId }, { caps: CAPS });
    expect(asked.message['error']).toMatchObject({ code: -32603, data: { reason: 'instance_unreachable' } });
    // Another principal's, or an unknown id, is still not found.
    const unknown = await post(b.url, 'tasks/get', { taskId: 'a~no-such-task' }, { caps: CAPS });
    expect(unknown.message['error']).toMatchObject({ code: -32602, message: expect.stringMatching(/^Task not found/) });
    // The owner closing: what reaches it for its tasks is told it closes.
    const closing = a.gateway.close();
    const own = post(a.url, 'tasks/get', { taskId }, { caps: CAPS, fetch: inProcess(a.gateway) });
    await closing;
    expect((await own).message['error']).toMatchObject({ data: { reason: expect.stringMatching(/^gateway_(closing|draining)$/) } });
  });
});
