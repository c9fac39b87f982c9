/**
 * The proxy tools (seeds 000/001) through the real gateway, over real HTTP, in front of the legacy
 * fixture over stdio: a 2026-07-28 client on the wire (with and without input capabilities), and the
 * SDK v1 client on the legacy route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { startHttpBackendProcess } from '../helpers/processes.js';
import { eventOf, eventTypes, eventsUntil, proxyCaller, split, type Parts } from '../helpers/proxy-tools.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';
import { canSeeProcessActivity } from '../../src/core/backend/process-activity.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
let gw: RunningGateway;

beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { legacy: stdioFixture() },
    gateway: {
      coalesceMs: 0,
      apiKeys: [
        { principal: 'alice', key: ALICE },
        { principal: 'bob', key: BOB },
      ],
      proxyTools: { enabled: true, addServer: { urls: ['http://127.0.0.1:*/allowed/*'] } },
    },
  });
});
afterAll(async () => gw?.close());

const ELICIT = { elicitation: {} };

/** Calls a proxy tool as a 2026-07-28 client and splits its answer into the seed's parts. */
async function tool(
  name: string,
  args: Record<string, unknown> = {},
  opts: { key?: string; caps?: Record<string, unknown>; extra?: Record<string, unknown> } = {},
): Promise<Parts> {
  const reply = await post(
    gw.url,
    'tools/call',
    { name, arguments: args, ...opts.extra },
    { caps: opts.caps ?? {}, headers: { authorization: `Bearer ${opts.key ?? ALICE}` } },
  );
  return split(reply);
}

/** Calls await_activity until an event of `type` arrives (as an agent does); returns every event type seen. */
async function awaitEvent(type: string, key = ALICE): Promise<string[]> {
  return eventsUntil(type, async () => eventTypes(await tool('await_activity', { timeout_ms: 2_000 }, { key })));
}

describe('proxy tools on /mcp (2026-07-28 client)', () => {
  it('are listed beside the pass-through tools, whose names stay as they were (one backend: no prefix)', async () => {
    const plain = await post(gw.url, 'tools/list', {}, { caps: ELICIT, headers: { authorization: `Bearer ${ALICE}` } });
    const tools = (plain.message['result'] as { tools: { name: string; inputSchema: { properties: object } }[] }).tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['execute_tool', 'await_activity', 'get_logs', 'respond_to_elicitation', 'echo']));
    expect(tools.find((t) => t.name === 'execute_tool')!.inputSchema.properties).toHaveProperty('timeout_ms');
    // and a pass-through call still reaches the backend by its own name
    const echoed = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'direct' } }, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(echoed.message['result']).toMatchObject({ content: [{ type: 'text', text: 'direct' }] });
  });

  it('lists servers and their tools, and executes a tool', async () => {
    const servers = await tool('list_servers');
    expect(servers.body).toEqual({
      servers: [
        {
          name: 'legacy',
          source: 'config',
          command: process.execPath,
          args: expect.any(Array),
          status: 'up',
          connected: true,
          connectedAt: expect.any(String),
        },
      ],
    });
    const tools = (await tool('list_tools', { server: 'legacy' })).body['tools'] as { server: string; name: string }[];
    expect(tools).toEqual(expect.arrayContaining([expect.objectContaining({ server: 'legacy', name: 'echo' })]));
    const run = await tool('execute_tool', { server: 'legacy', tool: 'echo', arguments: { text: 'hi' } });
    expect(run.body).toEqual({ result: { content: [{ type: 'text', text: 'hi' }] } });
  });

  it('reports bad arguments and unknown servers and tools as structured tool errors', async () => {
    const bad = await tool('execute_tool', { server: 'legacy' });
    expect(bad.isError).toBe(true);
    expect(bad.body).toMatchObject({ error: { code: 'TOOL_ERR_INVALID_ARGUMENTS' } });
    expect((await tool('execute_tool', { server: 'nope', tool: 'x' })).body).toMatchObject({ error: { code: 'TOOL_ERR_SERVER_NOT_FOUND' } });
    expect((await tool('execute_tool', { server: 'legacy', tool: 'nope' })).body).toMatchObject({ error: { code: 'TOOL_ERR_NOT_FOUND' } });
    expect((await tool('get_task', { taskId: 'x~y' })).body).toMatchObject({ error: { code: 'TOOL_ERR_TASK_NOT_FOUND' } });
  });

  it("answers a backend's elicitation as an input_required round of execute_tool itself (MRTR), for a client that declared elicitation", async () => {
    const first = await tool('execute_tool', { server: 'legacy', tool: 'elicit_name' }, { caps: ELICIT });
    const ir = first.reply.message['result'] as { resultType: string; inputRequests: Record<string, { method: string }>; requestState: string };
    expect(ir.resultType).toBe('input_required');
    const [key, request] = Object.entries(ir.inputRequests)[0]!;
    expect(request.method).toBe('elicitation/create');
    const done = await tool(
      'execute_tool',
      { server: 'legacy', tool: 'elicit_name' },
      { caps: ELICIT, extra: { inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState } },
    );
    expect(done.body).toEqual({ result: { content: [{ type: 'text', text: 'Hello, Ada!' }] } });
    expect(done.pending).toBeUndefined();
  });

  it('makes a task past timeout_ms; the elicitation of a client that cannot be asked waits as a pending client action; events arrive once', async () => {
    const started = await tool('execute_tool', { server: 'legacy', tool: 'elicit_name', timeout_ms: 200 }, { key: BOB });
    // A task either way: past timeout_ms, or at once when the backend asked what Bob cannot be asked.
    expect(started.body).toMatchObject({ task: { toolName: 'elicit_name', server: 'legacy' }, server_pending: { server: 'legacy' } });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    expect(started.events?.map((e) => e.type)).toEqual(expect.arrayContaining(['task_created']));
    // Bob's first call starts his own backend process: its question may come after the timeout.
    if (!started.pending) expect(await awaitEvent('elicitation_request', BOB)).toContain('elicitation_request');
    const listed = await tool('get_elicitations', {}, { key: BOB });
    expect(listed.body['elicitations']).toEqual([expect.objectContaining({ server: 'legacy', message: 'What is your name?', taskId })]);
    expect(listed.pending?.elicitations).toHaveLength(1); // and in every response while it waits
    const requestId = (listed.body['elicitations'] as { requestId: string }[])[0]!.requestId;

    // Alice's scope sees none of Bob's work.
    expect((await tool('list_tasks')).body).toEqual({ tasks: [] });
    expect((await tool('respond_to_elicitation', { requestId, action: 'accept', content: { name: 'Eve' } })).body).toMatchObject({
      error: { code: 'TOOL_ERR_REQUEST_NOT_FOUND' },
    });

    const answered = await tool('respond_to_elicitation', { requestId, action: 'accept', content: { name: 'Bob' } }, { key: BOB });
    expect(answered.body).toEqual({ answered: requestId });

    expect(await awaitEvent('task_completed', BOB)).toContain('task_completed');
    const quiet = await tool('await_activity', { timeout_ms: 10 }, { key: BOB });
    expect(quiet.body['pending_client']).toEqual({ elicitations: [], sampling_requests: [] });
    // Delivered once: the next response carries no events.
    const next = await tool('get_task_result', { taskId }, { key: BOB });
    expect(next.events).toBeUndefined();
    expect(next.body).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text', text: 'Hello, Bob!' }] } });
    // The same task is a task of the tasks extension too.
    const viaExtension = await post(
      gw.url,
      'tasks/get',
      { taskId },
      { caps: { extensions: { 'io.modelcontextprotocol/tasks': {} } }, headers: { authorization: `Bearer ${BOB}` } },
    );
    expect(viaExtension.message['result'], JSON.stringify(viaExtension.message)).toMatchObject({ taskId, status: 'completed' });
  });

  it('answers a sampling request through respond_to_sampling', async () => {
    const started = await tool('execute_tool', { server: 'legacy', tool: 'sample', arguments: { prompt: 'Capital?' }, timeout_ms: 100 }, { key: BOB });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    if (!started.pending) expect(await awaitEvent('sampling_request', BOB)).toContain('sampling_request');
    const requests = (await tool('get_sampling_requests', {}, { key: BOB })).body['sampling_requests'] as Record<string, unknown>[];
    expect(requests).toEqual([expect.objectContaining({ server: 'legacy', taskId, maxTokens: 50 })]);
    const requestId = (requests[0] as { requestId: string }).requestId;
    const bad = await tool('respond_to_sampling', { requestId, content: 'no', model: 'm' }, { key: BOB });
    expect(bad.body).toMatchObject({ error: { code: 'TOOL_ERR_INVALID_ARGUMENTS', message: expect.stringContaining('not a sampling result') } });
    const wrongTool = await tool('respond_to_elicitation', { requestId, action: 'accept', content: {} }, { key: BOB });
    expect(wrongTool.body).toMatchObject({ error: { message: expect.stringContaining('answer it with respond_to_sampling') } });
    await tool('respond_to_sampling', { requestId, content: { type: 'text', text: 'Paris' }, model: 'm', stopReason: 'endTurn' }, { key: BOB });
    expect(await awaitEvent('task_completed', BOB)).toContain('task_completed');
    expect((await tool('get_task_result', { taskId }, { key: BOB })).body).toMatchObject({
      status: 'completed',
      result: { content: [{ text: 'LLM: Paris' }] },
    });
  });

  it('hands a question the client cannot be asked over at once (no waiting for timeout_ms), checks answers against the requested schema, and lets a sampling request be declined', async () => {
    // default timeout_ms: 120 s, past the test's own timeout; `timeout: false` says it did not wait it out.
    const asked = await tool('execute_tool', { server: 'legacy', tool: 'elicit_name' }, { key: BOB });
    expect(asked.body).toMatchObject({ timeout: false, needs_input: true, task: { status: 'input_required' } });
    const [question] = asked.pending!.elicitations as { requestId: string }[];
    const wrong = await tool('respond_to_elicitation', { requestId: question!.requestId, action: 'accept', content: { name: 42 } }, { key: BOB });
    expect(wrong.body).toMatchObject({ error: { code: 'TOOL_ERR_INVALID_ARGUMENTS', message: expect.stringContaining('content.name must be a string') } });
    const missing = await tool('respond_to_elicitation', { requestId: question!.requestId, action: 'accept' }, { key: BOB });
    expect(missing.body).toMatchObject({ error: { message: expect.stringContaining('content.name is required') } });
    expect(missing.pending?.elicitations).toHaveLength(1); // still waiting for a good answer
    await tool('respond_to_elicitation', { requestId: question!.requestId, action: 'accept', content: { name: 'Bo' } }, { key: BOB });

    const sampled = await tool('execute_tool', { server: 'legacy', tool: 'sample', arguments: { prompt: 'p' } }, { key: BOB });
    const taskId = (sampled.body['task'] as { taskId: string }).taskId;
    const [request] = sampled.pending!.sampling_requests as { requestId: string }[];
    expect((await tool('respond_to_sampling', { requestId: request!.requestId, action: 'decline' }, { key: BOB })).body).toEqual({
      declined: request!.requestId,
    });
    expect(await awaitEvent('task_completed', BOB)).toContain('task_completed');
    // The backend got the refusal as an error and ended with a tool error, which shows at the top level too.
    const result = await tool('get_task_result', { taskId }, { key: BOB });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.body)).toContain('declined');
  });

  it('shows a backend tool error at the top level of execute_tool, and names wrong filters', async () => {
    const r = await tool('execute_tool', { server: 'legacy', tool: 'echo', arguments: { text: 1 } });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({ result: { isError: true } });
    expect((await tool('get_logs', { server: 'nope' })).body).toMatchObject({ error: { code: 'TOOL_ERR_SERVER_NOT_FOUND' } });
    expect((await tool('get_prompt', { server: 'legacy', name: 'nope' })).body).toMatchObject({ error: { code: 'TOOL_ERR_NOT_FOUND' } });
  });

  it('keeps backend log lines for get_logs, filtered by level and limited', async () => {
    await tool('execute_tool', { server: 'legacy', tool: 'logs' });
    const all = (await tool('get_logs', { server: 'legacy' })).body['logs'] as { level: string; message: string }[];
    expect(all.map((l) => l.message)).toEqual(expect.arrayContaining(['log debug', 'log info', 'log error']));
    const errors = (await tool('get_logs', { level: 'warn' })).body['logs'] as { level: string }[];
    expect(errors.every((l) => l.level === 'error')).toBe(true);
    expect((await tool('get_logs', { limit: 1 })).body['logs']).toHaveLength(1);
  });

  it('await_activity returns at its timeout when nothing happens', async () => {
    await tool('await_activity', { timeout_ms: 10 }); // takes what was pending
    const quiet = await tool('await_activity', { timeout_ms: 50 });
    expect(quiet.body).toMatchObject({ triggers: [{ type: 'timeout' }], events: [], pending_server: [] });
  });

  it('cancels a task with cancel_task, and reports it as an event', async () => {
    const started = await tool('execute_tool', { server: 'legacy', tool: 'slow', arguments: { id: 'proxy-cancel' }, timeout_ms: 50 });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    expect((await tool('list_tasks', { status: 'working' })).body['tasks']).toEqual([expect.objectContaining({ taskId, toolName: 'slow' })]);
    await tool('cancel_task', { taskId });
    expect(await awaitEvent('task_cancelled')).toContain('task_cancelled');
    expect((await tool('get_task', { taskId })).body).toMatchObject({ task: { status: 'cancelled' } });
  });

  it('keeps workspaces apart, and a workspace handle means nothing to another principal', async () => {
    const ws = (await tool('new_workspace')).body['workspace'] as string;
    const started = await tool('execute_tool', { server: 'legacy', tool: 'slow', arguments: { id: 'ws-1', ms: 300 }, timeout_ms: 20, workspace: ws });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    expect((await tool('list_tasks', { workspace: ws })).body['tasks']).toEqual([expect.objectContaining({ taskId })]);
    expect(((await tool('list_tasks')).body['tasks'] as { taskId: string }[]).map((t) => t.taskId)).not.toContain(taskId);
    expect((await tool('list_tasks', { workspace: ws }, { key: BOB })).body).toMatchObject({ error: { code: 'TOOL_ERR_SESSION_NOT_FOUND' } });
  });

  it('lists and reads resources and prompts of a backend, the MRTR way when the backend asks', async () => {
    const resources = (await tool('list_resources', { server: 'legacy' })).body['resources'] as { uri: string }[];
    expect(resources.map((r) => r.uri)).toContain('test://static');
    const read = await tool('read_resource', { server: 'legacy', uri: 'test://static' });
    expect(read.body).toMatchObject({ result: { contents: [{ uri: 'test://static' }] } });
    for (const uri of ['x', '\u0000']) {
      const bad = await tool('read_resource', { server: 'legacy', uri });
      expect(bad.body).toMatchObject({ error: { code: 'TOOL_ERR_INVALID_ARGUMENTS', message: expect.stringMatching(/absolute URI|control characters/) } });
    }
    const prompts = (await tool('list_prompts', { server: 'legacy' })).body['prompts'] as { name: string }[];
    expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(['plain_prompt', 'ask_prompt']));
    const plain = await tool('get_prompt', { server: 'legacy', name: 'plain_prompt', arguments: { topic: 'owls' } });
    expect(plain.body).toMatchObject({ result: { messages: [{ content: { text: 'About owls' } }] } });
    const asked = await tool('get_prompt', { server: 'legacy', name: 'ask_prompt' }, { caps: ELICIT });
    const ir = asked.reply.message['result'] as { resultType: string; inputRequests: Record<string, unknown>; requestState: string };
    expect(ir.resultType).toBe('input_required');
    const key = Object.keys(ir.inputRequests)[0]!;
    const done = await tool(
      'get_prompt',
      { server: 'legacy', name: 'ask_prompt' },
      { caps: ELICIT, extra: { inputResponses: { [key]: { action: 'accept', content: { context: 'tea' } } }, requestState: ir.requestState } },
    );
    expect(done.body).toMatchObject({ result: { messages: [{ content: { text: 'Prompt with context: tea' } }] } });
  });

  it("answers a backend's sampling request as an input_required round of execute_tool for a client that declared sampling", async () => {
    const first = await tool('execute_tool', { server: 'legacy', tool: 'sample', arguments: { prompt: 'Capital?' } }, { caps: { sampling: {} } });
    const ir = first.reply.message['result'] as { inputRequests: Record<string, { method: string }>; requestState: string };
    const [key, request] = Object.entries(ir.inputRequests)[0]!;
    expect(request.method).toBe('sampling/createMessage');
    const done = await tool(
      'execute_tool',
      { server: 'legacy', tool: 'sample', arguments: { prompt: 'Capital?' } },
      {
        caps: { sampling: {} },
        extra: { inputResponses: { [key]: { role: 'assistant', content: { type: 'text', text: 'Rome' }, model: 'm' } }, requestState: ir.requestState },
      },
    );
    expect(done.body).toEqual({ result: { content: [{ type: 'text', text: 'LLM: Rome' }] } });
  });

  it('serves emceepee://diagrams', async () => {
    const r = await post(gw.url, 'resources/read', { uri: 'emceepee://diagrams' }, { headers: { authorization: `Bearer ${ALICE}` } });
    expect((r.message['result'] as { contents: { text: string }[] }).contents[0]!.text).toContain('sequenceDiagram');
  });

  it('refuses add_server outside the allow-list, and tells every scope when a server is added', async () => {
    const refused = await tool('add_server', { name: 'evil', command: 'sh', args: ['-c', 'echo pwned'] });
    expect(refused.body).toMatchObject({ error: { code: 'TOOL_ERR_NOT_ALLOWED' } });
    const refusedUrl = await tool('add_server', { name: 'other', url: 'http://127.0.0.1:9/elsewhere' });
    expect(refusedUrl.body).toMatchObject({ error: { code: 'TOOL_ERR_NOT_ALLOWED' } });
    await tool('get_logs', {}, { key: BOB }); // Bob's scope exists and is up to date
    const added = await tool('add_server', { name: 'extra', url: 'http://127.0.0.1:9/allowed/mcp' });
    expect(added.body).toMatchObject({ added: 'extra' });
    expect(await awaitEvent('server_added', BOB)).toContain('server_added');
    expect((await tool('remove_server', { name: 'legacy' })).body).toMatchObject({ error: { code: 'TOOL_ERR_NOT_ALLOWED' } });
    expect((await tool('remove_server', { name: 'extra' }, { key: BOB })).body).toMatchObject({ error: { code: 'TOOL_ERR_NOT_ALLOWED' } });
    expect((await tool('remove_server', { name: 'extra' })).body).toEqual({ removed: 'extra' });
  });
});

describe('await_activity', () => {
  it('is woken by each kind of event, and get_notifications reads the backend notifications once', async () => {
    const http = await startHttpBackendProcess();
    const g = await startGateway({
      mcpServers: { legacy: stdioFixture() },
      gateway: { tasks: { ttlMs: 1_000 }, proxyTools: { enabled: true, addServer: { urls: [http.url] } } },
    });
    try {
      const call = async (name: string, args: Record<string, unknown>) => split(await post(g.url, 'tools/call', { name, arguments: args }));
      const ws = (await call('new_workspace', {})).body['workspace'] as string;
      /** Starts an await_activity (in `scope`), runs `trigger`, and returns the event types that woke it. */
      const wakes = async (trigger: () => Promise<unknown>, scope?: string): Promise<string[]> => {
        const before = await call('await_activity', { timeout_ms: 0, ...(scope ? { workspace: scope } : {}) }); // take what was there
        const waiting = call('await_activity', { timeout_ms: 10_000, ...(scope ? { workspace: scope } : {}) });
        await trigger();
        const woke = await waiting;
        const taken = eventTypes(before);
        // An event that came between the two calls wakes the second at once (trigger `immediate`, no
        // eventType): it is in that answer's events (on a loaded machine a crash's task_failed came so).
        return [...taken, ...(woke.body['triggers'] as { eventType?: string }[]).map((t) => t.eventType ?? ''), ...eventTypes(woke)];
      };
      // Events for everyone, seen from a workspace while the default scope acts.
      expect(await wakes(() => call('execute_tool', { server: 'legacy', tool: 'trigger_tool_change' }), ws)).toContain('notification');
      expect((await call('get_notifications', { workspace: ws })).body['notifications']).toEqual(
        expect.arrayContaining([expect.objectContaining({ server: 'legacy', method: 'notifications/tools/list_changed' })]),
      );
      expect((await call('get_notifications', { workspace: ws })).body['notifications']).toEqual([]);
      // Adding a server connects it (server_connected) and announces it (server_added).
      const added = await wakes(() => call('add_server', { name: 'web', url: http.url }), ws);
      const rest = eventTypes(await call('await_activity', { timeout_ms: 0, workspace: ws }));
      expect([...added, ...rest]).toEqual(expect.arrayContaining(['server_connected', 'server_added']));
      expect(await wakes(() => call('remove_server', { name: 'web' }), ws)).toContain('server_removed');
      // Task events, in the scope that owns the task.
      // (a backend session that starts announces its tools too: wait past such notifications)
      // (and an event that came before execute_tool answered is delivered in that answer)
      const until = async (type: string, started: Parts): Promise<string[]> => {
        const early = (started.events ?? []).map((e) => e.type);
        return early.includes(type) ? early : [...early, ...(await eventsUntil(type, () => wakes(async () => undefined)))];
      };
      const slow = await call('execute_tool', { server: 'legacy', tool: 'slow', arguments: { id: 'wake-1', ms: 300 }, timeout_ms: 20 });
      expect(await until('task_completed', slow)).toContain('task_completed');
      const expiring = await call('execute_tool', { server: 'legacy', tool: 'slow', arguments: { id: 'wake-2', ms: 5_000 }, timeout_ms: 20 });
      expect(await until('task_expired', expiring)).toContain('task_expired'); // tasks.ttlMs is 1 s here
      const crashing = await call('execute_tool', { server: 'legacy', tool: 'crash', timeout_ms: 5 });
      expect(await until('task_failed', crashing)).toContain('task_failed');
    } finally {
      await g.close();
      http.child.kill('SIGKILL');
    }
  }, 90_000); // eight waits for events, each bounded generously for a loaded machine
});

describe('proxy tools in front of a 2026-07-28 backend', () => {
  it("holds a stateless backend's input round as a task's pending client action, and carries the task on with the answer", async () => {
    const modern = await startModernServer();
    const g = await startGateway({
      mcpServers: { modern: { url: modern.url, protocol: '2026-07-28' } },
      gateway: { proxyTools: { enabled: true, mode: 'alone' } },
    });
    try {
      const call = async (name: string, args: Record<string, unknown>) => split(await post(g.url, 'tools/call', { name, arguments: args }));
      const names = ((await post(g.url, 'tools/list', {})).message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
      expect(names).not.toContain('confirm'); // "alone": the backend is reached through the proxy tools only
      const started = await call('execute_tool', { server: 'modern', tool: 'confirm', arguments: { what: 'the order' }, timeout_ms: 5_000 });
      expect(started.body).toMatchObject({ timeout: false, needs_input: true, task: { status: 'input_required' } });
      const taskId = (started.body['task'] as { taskId: string }).taskId;
      const [elicitation] = started.pending!.elicitations as { requestId: string; message: string }[];
      expect(elicitation).toMatchObject({ message: 'Confirm the order?', taskId });
      await call('respond_to_elicitation', { requestId: elicitation!.requestId, action: 'accept', content: { ok: true } });
      const deadline = Date.now() + 5_000;
      let result = await call('get_task_result', { taskId });
      while (result.body['status'] !== 'completed' && Date.now() < deadline)
        result = await call('await_activity', { timeout_ms: 1_000 }).then(() => call('get_task_result', { taskId }));
      expect(result.body).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'confirmed the order ok=true' }] } });
    } finally {
      await g.close();
      await modern.close();
    }
  });
});

describe('proxy tools when a backend restarts mid-call', () => {
  it('fails the task, drops its pending request, and reports the disconnection and the reconnection as events', async () => {
    let backend = await startHttpBackendProcess();
    const g = await startGateway({ mcpServers: { web: { url: backend.url } }, gateway: { healthCheckMs: 200, proxyTools: { enabled: true } } });
    try {
      // Every event this caller is delivered, in any answer, is recorded (call.seen).
      const call = proxyCaller(g.url);
      const until = async (type: string): Promise<string[]> => (await eventOf(call, type, () => true, 15_000)).map((e) => e.type);
      const started = await call('execute_tool', { server: 'web', tool: 'elicit_name', timeout_ms: 100 });
      const taskId = (started.body['task'] as { taskId: string }).taskId;
      if (!started.pending) expect(await until('elicitation_request')).toContain('elicitation_request');
      const [pending] = (await call('get_elicitations', {})).body['elicitations'] as { requestId: string }[];
      expect(pending).toBeDefined();

      backend.child.kill('SIGKILL');
      const afterKill = await until('task_failed');
      expect(afterKill).toContain('task_failed');
      // The pending request did not vanish silently: it expired, and said so before its task failed.
      expect(afterKill.indexOf('elicitation_expired')).toBeGreaterThanOrEqual(0);
      expect(afterKill.indexOf('elicitation_expired')).toBeLessThan(afterKill.indexOf('task_failed'));
      expect(call.seen.find((e) => e.type === 'elicitation_expired')).toMatchObject({
        server: 'web',
        data: { requestId: pending!.requestId, taskId, reason: 'server_disconnected' },
      });
      expect((await call('get_elicitations', {})).body['elicitations']).toEqual([]);
      expect((await call('respond_to_elicitation', { requestId: pending!.requestId, action: 'accept', content: { name: 'late' } })).body).toMatchObject({
        error: { code: 'TOOL_ERR_REQUEST_NOT_FOUND' },
      });
      expect((await call('get_task', { taskId })).body).toMatchObject({ task: { status: 'failed' } });

      backend = await startHttpBackendProcess(Number(new URL(backend.url).port));
      const afterRestart = await until('server_reconnected');
      expect(afterRestart).toContain('server_disconnected');
      expect(afterRestart).toContain('server_reconnected');
      expect((await call('execute_tool', { server: 'web', tool: 'echo', arguments: { text: 'back' } })).body).toEqual({
        result: { content: [{ type: 'text', text: 'back' }] },
      });
    } finally {
      await g.close();
      backend.child.kill('SIGKILL');
    }
  });
});

describe('proxy tools on the legacy route (SDK v1 client)', () => {
  it("sends the backend's elicitation behind execute_tool to the client as a real request", async () => {
    const client = new Client({ name: 'legacy-agent', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Legacy' } }));
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }));
    const r = await client.callTool({ name: 'execute_tool', arguments: { server: 'legacy', tool: 'elicit_name' } });
    const body = JSON.parse((r.content as { text: string }[])[0]!.text) as unknown;
    expect(body).toEqual({ result: { content: [{ type: 'text', text: 'Hello, Legacy!' }] } });
    await client.close();
  });
});

// A proxy tool's round waits as the backend call it relays does (fronts/proxy/attend.ts `relays`): over
// stdio, until the backend's process is quiet, not for a time gap after its last request.
describe.skipIf(!canSeeProcessActivity)('proxy tools: the round of execute_tool over a stdio backend', () => {
  let dflt: RunningGateway;
  beforeAll(async () => {
    dflt = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { proxyTools: { enabled: true } } });
  });
  afterAll(async () => dflt?.close());

  it('carries two requests the backend makes with 5 ms of work between them in one round (the default configuration)', async () => {
    const caps = { elicitation: {}, sampling: {} };
    const answers: Record<string, unknown> = {
      'elicitation/create': { action: 'accept', content: { login: 'octocat' } },
      'sampling/createMessage': { role: 'assistant', content: { type: 'text', text: 'Paris.' }, model: 'm', stopReason: 'endTurn' },
    };
    const call = { name: 'execute_tool', arguments: { server: 'legacy', tool: 'both_after_work', arguments: { ms: 5 } } };
    for (let i = 0; i < 5; i++) {
      const result = (await post(dflt.url, 'tools/call', call, { caps })).message['result'] as Record<string, unknown>;
      expect(result['resultType']).toBe('input_required');
      const asked = Object.entries(result['inputRequests'] as Record<string, { method: string }>);
      expect(asked.map(([, r]) => r.method).sort()).toEqual(['elicitation/create', 'sampling/createMessage']);
      // Answered, so that the next call finds the backend's process free again (and warm).
      const inputResponses = Object.fromEntries(asked.map(([key, { method }]) => [key, answers[method]]));
      const done = (await post(dflt.url, 'tools/call', { ...call, inputResponses, requestState: result['requestState'] }, { caps })).message['result'];
      expect(JSON.stringify(done)).toMatch(/octocat.*Paris/);
    }
  });
});

describe('the proxy tools while the gateway drains', () => {
  it('serves those that carry work on (an answer to a pending question, a task) and refuses new work', async () => {
    const g = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { coalesceMs: 0, proxyTools: { enabled: true } } });
    try {
      const call = (name: string, args: Record<string, unknown>) => post(g.url, 'tools/call', { name, arguments: args });
      const asked = split(await call('execute_tool', { server: 'legacy', tool: 'elicit_name' }));
      expect(asked.body).toMatchObject({ needs_input: true, task: { status: 'input_required' } });
      const taskId = (asked.body['task'] as { taskId: string }).taskId;
      const [question] = asked.pending!.elicitations as { requestId: string }[];
      // The drain ends when the call does: with its answer, long before the drain's deadline cancels it.
      const drained = g.gateway.drain(60_000).then(() => 'drained');
      expect((await call('execute_tool', { server: 'legacy', tool: 'echo', arguments: { text: 'x' } })).message['error']).toMatchObject({
        data: { reason: 'gateway_draining' },
      });
      expect(split(await call('get_task', { taskId })).body).toMatchObject({ task: { taskId } });
      expect(split(await call('respond_to_elicitation', { requestId: question!.requestId, action: 'accept', content: { name: 'Di' } })).body).toMatchObject({
        answered: expect.any(String),
      });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise((resolve) => (timer = setTimeout(resolve, 20_000, 'still waiting for the deadline')));
      try {
        expect(await Promise.race([drained, late])).toBe('drained');
      } finally {
        clearTimeout(timer);
      }
    } finally {
      await g.close();
    }
  });
});
