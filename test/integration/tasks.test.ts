/**
 * Tasks (extension io.modelcontextprotocol/tasks) over a real legacy stdio backend, on the wire: a long
 * call promoted and polled to completion, input inside a task (one and two rounds, answered with
 * tasks/update), cancel while working and while waiting, expiry on the clock seam, waits for input
 * bounded by the server's parkTimeoutMs, a backend crash
 * mid-task, a foreign principal, and a client without the extension. Every reply is checked against
 * the extension's shapes (helpers/wire.ts).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASKS_EXTENSION } from '../../src/protocol/rev-2026-07-28/tasks.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { fileHas, pause, until } from '../helpers/until.js';
import { assertWireResponse, openListen, post, type WireReply } from '../helpers/wire.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
const TASKS = { extensions: { [TASKS_EXTENSION]: {} } };
const ASKING = { ...TASKS, elicitation: {} };
const cancelLog = join(mkdtempSync(join(tmpdir(), 'tasks-')), 'cancel.log');

const taskTools = {
  tools: {
    slow: { promoteAfterMs: 50 },
    elicit_name: { support: 'required', promoteAfterMs: 0 },
    elicit_two: { promoteAfterMs: 0 },
    crash: { promoteAfterMs: 0 },
    echo: { support: 'forbidden' },
  },
};

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: { ...stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog }), isolation: 'shared', tasks: taskTools } },
    gateway: {
      coalesceMs: 0,
      apiKeys: [
        { principal: 'alice', key: ALICE },
        { principal: 'bob', key: BOB },
      ],
      tasks: { pollIntervalMs: 100 },
    },
  });
});
afterAll(async () => gw?.close());

/** One checked request as `key`'s principal. */
async function rpc(method: string, params: Record<string, unknown>, caps: Record<string, unknown> = TASKS, key = ALICE, url = gw.url): Promise<WireReply> {
  const reply = await post(url, method, params, { caps, headers: { authorization: `Bearer ${key}` } });
  // The /mcp wire rules; the draft dialect answers in the draft's shapes.
  if (!url.endsWith('/draft')) assertWireResponse(method, reply.message);
  return reply;
}
const resultOf = (r: WireReply) => r.message['result'] as Record<string, unknown>;
const errorOf = (r: WireReply) => r.message['error'] as { code: number; message: string; data?: Record<string, unknown> };

async function createTask(name: string, args: Record<string, unknown>, caps: Record<string, unknown> = TASKS, url = gw.url): Promise<string> {
  const created = resultOf(await rpc('tools/call', { name, arguments: args }, caps, ALICE, url));
  expect(created['resultType']).toBe('task');
  return created['taskId'] as string;
}

/** Polls tasks/get, as a client does (at the pollIntervalMs the task suggests), until `done` holds; 30 s at most. */
async function pollTask(taskId: string, done: (t: Record<string, unknown>) => boolean, url = gw.url): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const t = resultOf(await rpc('tasks/get', { taskId }, TASKS, ALICE, url));
    if (done(t)) return t;
    if (Date.now() > deadline) throw new Error(`task ${taskId} stayed ${String(t['status'])}`);
    await pause(Number(t['pollIntervalMs'] ?? 100));
  }
}
const terminal = (t: Record<string, unknown>) => ['completed', 'failed', 'cancelled'].includes(String(t['status']));
const status = (s: string) => (t: Record<string, unknown>) => t['status'] === s;

describe('tasks over a legacy backend', () => {
  it('advertises the extension in server/discover', async () => {
    const caps = resultOf(await rpc('server/discover', {}))['capabilities'] as Record<string, unknown>;
    expect(caps['extensions']).toEqual({ [TASKS_EXTENSION]: {} });
    expect(caps['tasks']).toBeUndefined();
  });

  it('promotes a call that outlives its promoteAfterMs (50 ms) to a task and polls it to completion', async () => {
    const reply = await rpc('tools/call', { name: 'slow', arguments: { id: 'long', ms: 1_500 } });
    const created = resultOf(reply);
    expect(created).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 1_800_000, pollIntervalMs: 100 }); // capped at callTimeoutMs
    expect(created['result'] ?? created['requestState'] ?? created['inputRequests']).toBeUndefined();
    const taskId = created['taskId'] as string;
    expect(taskId.startsWith(`${gw.gateway.instanceId}~`)).toBe(true);
    expect(resultOf(await rpc('tasks/get', { taskId }))).toMatchObject({ taskId, status: 'working' });
    const done = await pollTask(taskId, terminal);
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'finished' }] } });
    expect(Date.parse(String(done['lastUpdatedAt']))).toBeGreaterThan(Date.parse(String(done['createdAt'])));
  });

  it('answers a client without the extension synchronously, and refuses it a task-required tool with -32021', async () => {
    const quick = resultOf(await rpc('tools/call', { name: 'slow', arguments: { id: 'sync', ms: 200 } }, {}));
    expect(quick).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'finished' }] });
    const refused = errorOf(await rpc('tools/call', { name: 'elicit_name', arguments: {} }, { elicitation: {} }));
    expect(refused.code).toBe(-32021);
    expect(refused.data).toEqual({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const r = errorOf(await rpc(method, { taskId: 'any', inputResponses: {} }, {}));
      expect(r.code, method).toBe(-32021);
    }
    // A tool the operator marked "forbidden" never becomes a task.
    expect(resultOf(await rpc('tools/call', { name: 'echo', arguments: { text: 'hi' } }))).toMatchObject({ resultType: 'complete' });
  });

  it('carries input inside a task: input_required with inputRequests, answered with tasks/update', async () => {
    const taskId = await createTask('elicit_name', {}, ASKING);
    const waiting = await pollTask(taskId, status('input_required'));
    const requests = waiting['inputRequests'] as Record<string, { method: string; params: { message: string } }>;
    expect(Object.keys(requests)).toEqual(['user_name']);
    expect(requests['user_name']).toMatchObject({ method: 'elicitation/create', params: { message: 'What is your name?' } });
    const ack = resultOf(await rpc('tasks/update', { taskId, inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } }, stray: { x: 1 } } }));
    expect(ack).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    const done = await pollTask(taskId, terminal);
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Hello, Ada!' }] } });
  });

  it('carries two input rounds inside one task, with keys never reused', async () => {
    const taskId = await createTask('elicit_two', {}, ASKING);
    const first = await pollTask(taskId, status('input_required'));
    const [k1] = Object.keys(first['inputRequests'] as object);
    await rpc('tasks/update', { taskId, inputResponses: { [k1!]: { action: 'accept', content: { name: 'Ada' } } } });
    const second = await pollTask(taskId, (t) => t['status'] === 'input_required' && !Object.hasOwn(t['inputRequests'] as object, k1!));
    const [k2] = Object.keys(second['inputRequests'] as object);
    expect(k2).not.toBe(k1);
    // An answer to the first key again is ignored; the task keeps waiting for the second.
    await rpc('tasks/update', { taskId, inputResponses: { [k1!]: { action: 'accept', content: { name: 'Eve' } } } });
    expect(resultOf(await rpc('tasks/get', { taskId }))).toMatchObject({ status: 'input_required' });
    await rpc('tasks/update', { taskId, inputResponses: { [k2!]: { action: 'accept', content: { color: 'green' } } } });
    expect(await pollTask(taskId, terminal)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Ada likes green' }] } });
  });

  it('cancels a working task (the backend hears of it) and acknowledges cancel again once it ended', async () => {
    const taskId = await createTask('slow', { id: 'cancel-me', ms: 60_000 });
    expect(resultOf(await rpc('tasks/cancel', { taskId }))).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    expect(await pollTask(taskId, terminal)).toMatchObject({ status: 'cancelled' });
    expect(resultOf(await rpc('tasks/cancel', { taskId }))['resultType']).toBe('complete');
    await until('the backend to hear of the cancel', () => fileHas(cancelLog, 'cancelled cancel-me'));
  });

  it('cancels a task that waits for input', async () => {
    const taskId = await createTask('elicit_name', {}, ASKING);
    await pollTask(taskId, status('input_required'));
    await rpc('tasks/cancel', { taskId });
    const t = await pollTask(taskId, terminal);
    expect(t['status']).toBe('cancelled');
    expect(t['inputRequests']).toBeUndefined();
  });

  it('fails the task with a clear message when the backend crashes mid-task', async () => {
    const taskId = await createTask('crash', {});
    const t = await pollTask(taskId, terminal);
    expect(t['status']).toBe('failed');
    expect((t['error'] as { message: string }).message).toMatch(/backend/i);
  });

  it('never shows a task to another principal', async () => {
    const taskId = await createTask('slow', { id: 'alices', ms: 60_000 });
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const r = errorOf(await rpc(method, { taskId, inputResponses: {} }, TASKS, BOB));
      expect(r.code, method).toBe(-32602);
      expect(r.message).not.toContain('alice');
    }
    expect(resultOf(await rpc('tasks/get', { taskId }))['status']).toBe('working');
    await rpc('tasks/cancel', { taskId });
  });

  it('sends notifications/tasks to a listen stream that follows the task (its owner only)', async () => {
    const taskId = await createTask('elicit_name', {}, ASKING);
    const auth = { authorization: `Bearer ${ALICE}` };
    const stream = await openListen(gw.url, 77, { taskIds: [taskId, 'gw~unknown'] }, { caps: TASKS, headers: auth });
    const foreign = await openListen(gw.url, 78, { taskIds: [taskId] }, { caps: TASKS, headers: { authorization: `Bearer ${BOB}` } });
    try {
      await stream.waitFor(1);
      expect(stream.messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [taskId] } } });
      await foreign.waitFor(1);
      expect(foreign.messages[0]).toMatchObject({ params: { notifications: { taskIds: [] } } });
      const statusOf = (m: Record<string, unknown>) => (m['params'] as Record<string, unknown>)['status'];
      await until('input_required on the stream', () => stream.messages.some((m) => statusOf(m) === 'input_required'));
      const waiting = stream.messages.find((m) => statusOf(m) === 'input_required')!;
      expect(waiting).toMatchObject({ method: 'notifications/tasks', params: { taskId, inputRequests: { user_name: { method: 'elicitation/create' } } } });
      expect((waiting['params'] as Record<string, Record<string, unknown>>)['_meta']!['io.modelcontextprotocol/subscriptionId']).toBe(77);
      await rpc('tasks/update', { taskId, inputResponses: { user_name: { action: 'accept', content: { name: 'Kay' } } } });
      await until('completed on the stream', () => stream.messages.some((m) => statusOf(m) === 'completed'));
      expect(stream.messages.find((m) => statusOf(m) === 'completed')).toMatchObject({
        params: { taskId, result: { content: [{ type: 'text', text: 'Hello, Kay!' }] } },
      });
      // The owner's stream had every notification by now (the same fan-out): the barrier of this negative check.
      expect(foreign.messages.filter((m) => m['method'] === 'notifications/tasks')).toEqual([]);
      // taskIds without the extension: -32021.
      await expect(openListen(gw.url, 79, { taskIds: [taskId] }, { headers: auth })).rejects.toThrow(/-32021/);
    } finally {
      stream.close();
      foreign.close();
    }
  });

  it('keeps tasks/result and tasks/list out (-32601) and answers unknown ids with -32602', async () => {
    expect(errorOf(await rpc('tasks/result', { taskId: 'x' })).code).toBe(-32601);
    expect(errorOf(await rpc('tasks/list', {})).code).toBe(-32601);
    expect(errorOf(await rpc('tasks/get', { taskId: 'nope' })).code).toBe(-32602);
    expect(errorOf(await rpc('tasks/update', { taskId: 'nope' })).code).toBe(-32602); // no inputResponses
    const mismatch = await post(gw.url, 'tasks/get', { taskId: 'nope' }, { caps: TASKS, headers: { authorization: `Bearer ${ALICE}`, 'mcp-name': 'other' } });
    expect(errorOf(mismatch).code).toBe(-32020);
  });
});

describe('task expiry (clock seam)', () => {
  it('cancels a task past its ttlMs, keeps it readable for the retention period, then forgets it', async () => {
    const clock = new ManualClock();
    const short = await startGateway(
      {
        mcpServers: { legacy: { ...stdioFixture(), tasks: taskTools } },
        gateway: { apiKeys: [{ principal: 'alice', key: ALICE }], tasks: { ttlMs: 60_000, retentionMs: 30_000 } },
      },
      { clock },
    );
    try {
      const taskId = await createTask('slow', { id: 'expires', ms: 600_000 }, TASKS, short.url);
      clock.advance(60_000);
      const t = await pollTask(taskId, terminal, short.url);
      expect(t).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'task_expired' } } });
      clock.advance(29_000);
      expect(resultOf(await rpc('tasks/get', { taskId }, TASKS, ALICE, short.url))['status']).toBe('failed');
      clock.advance(1_000);
      expect(errorOf(await rpc('tasks/get', { taskId }, TASKS, ALICE, short.url)).code).toBe(-32602);
    } finally {
      await short.close();
    }
  });
});

describe("a task's waits for input (its server's parkTimeoutMs, clock seam)", () => {
  it('fails a task that waited for its answer past parkTimeoutMs (input_timeout), each wait timed from its start, and frees the session', async () => {
    const clock = new ManualClock();
    const short = await startGateway(
      {
        // One backend process: the next task can only start once the first one's call gave it back.
        mcpServers: { legacy: { ...stdioFixture(), parkTimeoutMs: 1_000, isolation: 'shared', maxSessions: 1, tasks: taskTools } },
        gateway: { apiKeys: [{ principal: 'alice', key: ALICE }], tasks: { pollIntervalMs: 100 } },
      },
      { clock },
    );
    const get = async (taskId: string) => resultOf(await rpc('tasks/get', { taskId }, TASKS, ALICE, short.url));
    try {
      // Two waits in one task: the second is timed from its own start, not the task's.
      const two = await createTask('elicit_two', {}, ASKING, short.url);
      const first = await pollTask(two, status('input_required'), short.url);
      clock.advance(900);
      const [k1] = Object.keys(first['inputRequests'] as object);
      await rpc('tasks/update', { taskId: two, inputResponses: { [k1!]: { action: 'accept', content: { name: 'Ada' } } } }, TASKS, ALICE, short.url);
      await pollTask(two, (t) => t['status'] === 'input_required' && !Object.hasOwn(t['inputRequests'] as object, k1!), short.url);
      clock.advance(999);
      expect((await get(two))['status']).toBe('input_required');
      clock.advance(1);
      const failed = await pollTask(two, terminal, short.url);
      expect(failed).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'input_timeout' } } });
      expect(String(failed['statusMessage'])).toMatch(/parkTimeoutMs/);
      await until('the call to end on the gateway', () => short.gateway.engine.live === 0);
      // A late answer changes nothing; the backend's session serves the next task.
      const late = await rpc('tasks/update', { taskId: two, inputResponses: { x: { action: 'accept', content: {} } } }, TASKS, ALICE, short.url);
      expect(late.message['result']).toMatchObject({ resultType: 'complete' }); // acknowledged, and nothing changes
      expect((await get(two))['status']).toBe('failed');
      const next = await createTask('elicit_name', {}, ASKING, short.url);
      await pollTask(next, status('input_required'), short.url);
      await rpc('tasks/update', { taskId: next, inputResponses: { user_name: { action: 'accept', content: { name: 'Lin' } } } }, TASKS, ALICE, short.url);
      expect(await pollTask(next, terminal, short.url)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Hello, Lin!' }] } });
    } finally {
      await short.close();
    }
  });
});

describe('the draft SEP-2322 dialect on /mcp/draft', () => {
  const draftUrl = () => gw.url.replace(/\/mcp$/, '/mcp/draft');
  const RELATED = 'io.modelcontextprotocol/related-task';

  it('serves the same tasks as /mcp: created on one endpoint, read and answered on the other', async () => {
    // Created on /mcp (the extension), continued with the draft methods.
    const taskId = await createTask('elicit_name', {}, ASKING);
    const waiting = resultOf(await rpc('tasks/result', { taskId }, ASKING, ALICE, draftUrl()));
    expect(waiting).toMatchObject({
      resultType: 'input_required',
      inputRequests: { user_name: { method: 'elicitation/create' } },
      _meta: { [RELATED]: { taskId } },
    });
    expect(waiting['requestState']).toBeUndefined();
    const ack = await post(
      draftUrl(),
      'tasks/input_response',
      { inputResponses: { user_name: { action: 'accept', content: { name: 'Lin' } } } },
      {
        caps: ASKING,
        meta: { [RELATED]: { taskId } },
        headers: { authorization: `Bearer ${ALICE}` },
      },
    );
    expect(ack.message['error']).toBeUndefined();
    expect(resultOf(ack)).toMatchObject({ resultType: 'complete', _meta: { [RELATED]: { taskId } } });
    // tasks/result blocks until the task has ended, then answers the call's own result.
    const final = resultOf(await rpc('tasks/result', { taskId }, ASKING, ALICE, draftUrl()));
    expect(final).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Hello, Lin!' }], _meta: { [RELATED]: { taskId } } });
    // ... and /mcp sees the same task completed.
    expect(resultOf(await rpc('tasks/get', { taskId }))).toMatchObject({ status: 'completed' });
    // The draft's method stays off /mcp, where the final suite wants -32601.
    expect(errorOf(await rpc('tasks/result', { taskId })).code).toBe(-32601);
  });

  it('creates a task from the draft `task` hint with the ttl asked for, in the draft shape', async () => {
    const created = resultOf(await rpc('tools/call', { name: 'slow', arguments: { id: 'draft', ms: 60_000 }, task: { ttl: 30_000 } }, {}, ALICE, draftUrl()));
    const task = created['task'] as Record<string, unknown>;
    expect(created['resultType']).toBe('complete');
    expect(task).toMatchObject({ status: 'working', ttl: 30_000, pollInterval: 100, statusMessage: expect.any(String) });
    const taskId = task['taskId'] as string;
    expect(resultOf(await rpc('tasks/get', { taskId }, {}, ALICE, draftUrl()))).toMatchObject({ taskId, status: 'working', ttl: 30_000 });
    expect(errorOf(await rpc('tasks/get', { taskId }, {}, BOB, draftUrl())).code).toBe(-32602);
    expect(resultOf(await rpc('tasks/cancel', { taskId }, {}, ALICE, draftUrl()))).toMatchObject({ taskId, status: 'cancelled' });
    expect(errorOf(await rpc('tasks/result', { taskId }, {}, ALICE, draftUrl()))).toMatchObject({ code: -32603 });
  });

  it('serves a task-required tool to a draft client that asked with the `task` hint (it cannot declare the extension)', async () => {
    const created = resultOf(await rpc('tools/call', { name: 'elicit_name', arguments: {}, task: {} }, { elicitation: {} }, ALICE, draftUrl()));
    const taskId = (created['task'] as Record<string, unknown>)['taskId'] as string;
    expect(resultOf(await rpc('tasks/result', { taskId }, { elicitation: {} }, ALICE, draftUrl()))).toMatchObject({ resultType: 'input_required' });
    await rpc('tasks/cancel', { taskId }, {}, ALICE, draftUrl());
  });

  it('answers a failed task’s tasks/result with its JSON-RPC error, and a call without the hint as on /mcp', async () => {
    const created = resultOf(await rpc('tools/call', { name: 'crash', arguments: {}, task: {} }, {}, ALICE, draftUrl()));
    const taskId = (created['task'] as Record<string, unknown>)['taskId'] as string;
    const failed = errorOf(await rpc('tasks/result', { taskId }, {}, ALICE, draftUrl()));
    expect(failed.message).toMatch(/backend/i);
    expect(resultOf(await rpc('tools/call', { name: 'echo', arguments: { text: 'plain' } }, {}, ALICE, draftUrl()))).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'plain' }],
    });
  });
});

describe('tasks/update leniency', () => {
  it('ignores keys the task is not waiting for, even malformed ones, and still applies the valid answer', async () => {
    const taskId = await createTask('elicit_name', {}, ASKING);
    await pollTask(taskId, status('input_required'));
    const ack = await rpc('tasks/update', {
      taskId,
      inputResponses: { user_name: { action: 'accept', content: { name: 'Io' } }, junk: 'not an object', other: [1] },
    });
    expect(resultOf(ack)['resultType']).toBe('complete');
    expect(await pollTask(taskId, terminal)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Hello, Io!' }] } });
    // Refused by the extension's schema at admission (the SDK's check, without a reason of ours).
    expect(errorOf(await rpc('tasks/update', { taskId, inputResponses: 'nope' })).code).toBe(-32602);
  });
});
