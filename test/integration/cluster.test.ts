/**
 * Two gateway instances on one real Redis (first step of the cluster): the parked-call bound holds
 * across them, a retry that lands on the instance that does not hold the call is told which case it is
 * (`request_state_instance` while the owner lives; forwarding comes next), and an instance that leaves
 * makes its calls `request_state_gone` at once everywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomStateKey } from '../../src/protocol/request-state.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { startLegacyHttpServer } from '../fixtures/legacy-http.js';
import { startCluster } from '../helpers/cluster.js';
import { until } from '../helpers/until.js';
import { post, postInitialize } from '../helpers/wire.js';
import { split } from '../helpers/proxy-tools.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
let a: RunningGateway;
let b: RunningGateway;

beforeAll(async () => {
  const stateKeys = [await randomStateKey()]; // every instance opens every instance's requestState
  const config = (instanceId: string) => ({
    mcpServers: { legacy: stdioFixture() },
    gateway: { coalesceMs: 0, maxParkedTotal: 1, cluster: { redis: REDIS_URL, keyPrefix: prefix, instanceId, heartbeatMs: 200 } },
  });
  a = await startGateway(config('a'), { stateKeys });
  b = await startGateway(config('b'), { stateKeys });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await cleanup();
});

describe('two instances on Redis', () => {
  it('share the parked-call bound, tell a retry which instance holds its call, and give up the calls of an instance that left', async () => {
    const parked = await post(a.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    const ir = parked.message['result'] as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(ir.resultType).toBe('input_required');

    // maxParkedTotal is 1 for the whole cluster: B may not park another call.
    const refused = await post(b.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    expect(refused.message['error']).toMatchObject({ data: { reason: 'parked_call_limit' } });

    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
    const elsewhere = await post(b.url, 'tools/call', retry, { caps: ELICIT });
    expect(elsewhere.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_instance' } });

    await a.close(); // A leaves the cluster
    const gone = await post(b.url, 'tools/call', retry, { caps: ELICIT });
    expect(gone.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_gone' } });
    // and its unit of the bound went with it
    const now = await post(b.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    expect((now.message['result'] as { resultType: string }).resultType).toBe('input_required');
  });
});

describe('forwarding between instances', () => {
  const { prefix: fwdPrefix, cleanup: fwdCleanup } = redisPrefix();
  let x: RunningGateway;
  let y: RunningGateway;
  let z: RunningGateway;
  beforeAll(async () => {
    [x, y, z] = (await startCluster(['x', 'y', 'z'], {
      prefix: fwdPrefix,
      mcpServers: { legacy: stdioFixture() },
      gateway: { tasks: { promoteAfterMs: 100 } },
    })) as [RunningGateway, RunningGateway, RunningGateway];
  });
  afterAll(async () => {
    await x?.close();
    await y?.close();
    await z?.close();
    await fwdCleanup();
  });

  it('serves a retry that lands on the other instance by forwarding it to the one that holds the call', async () => {
    const parked = await post(x.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
    const done = await post(y.url, 'tools/call', retry, { caps: ELICIT });
    expect(done.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    // The round was answered once, cluster-wide.
    const again = await post(x.url, 'tools/call', retry, { caps: ELICIT });
    expect(again.message['error']).toMatchObject({ data: { reason: expect.stringMatching(/^request_state_(stale|gone)$/) } });
  });

  it('serves a round once when its retry is sent many times at once, to the owner and to the other instances', async () => {
    const parked = await post(x.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => post([x, y, z][i % 3]!.url, 'tools/call', retry, { caps: ELICIT })));
    const served = answers.filter((a) => a.message['result'] !== undefined);
    expect(served).toHaveLength(1);
    expect(served[0]!.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    for (const refused of answers.filter((a) => a.message['result'] === undefined)) {
      expect(refused.message['error']).toMatchObject({ code: -32602, data: { reason: expect.stringMatching(/^request_state_(stale|gone)$/) } });
    }
  });

  it('forwards tasks/* for a task the other instance holds', async () => {
    const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const created = await post(x.url, 'tools/call', { name: 'slow', arguments: { id: 'fwd-task', ms: 400 } }, { caps: TASKS });
    const taskId = (created.message['result'] as { taskId: string }).taskId;
    expect(taskId.startsWith('x~')).toBe(true);
    const polled = await post(y.url, 'tasks/get', { taskId }, { caps: TASKS });
    expect(polled.message['result']).toMatchObject({ taskId, status: expect.stringMatching(/working|completed/) });
  });

  it('refuses a request on the internal path without a valid signature', async () => {
    const internal = new URL('/_cluster/forward', x.url);
    const res = await fetch(internal, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mcpgw-path': '/mcp', 'x-mcpgw-at': String(Date.now()), 'x-mcpgw-signature': '00'.repeat(32) },
      body: '{}',
    });

    expect(res.status).toBe(403);
  });

  it('keeps a task readable from every instance: created on X, polled on Y, answered on Z, its result read on Y after X stopped; a running one reported failed', async () => {
    const CAPS = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: {} };
    const get = async (taskId: string) => (await post(y.url, 'tasks/get', { taskId }, { caps: CAPS })).message['result'] as Record<string, unknown>;
    const reaches = async (taskId: string, status: string) => {
      let t: Record<string, unknown> = {};
      await until(`the task to be ${status}`, async () => (t = await get(taskId))['status'] === status);
      return t;
    };
    const created = await post(x.url, 'tools/call', { name: 'work_then_elicit', arguments: { ms: 300 } }, { caps: CAPS });
    const taskId = (created.message['result'] as { taskId: string }).taskId;
    const waiting = await reaches(taskId, 'input_required');
    const key = Object.keys(waiting['inputRequests'] as object)[0]!;
    const answered = await post(z.url, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { name: 'Ida' } } } }, { caps: CAPS });
    expect(answered.message['error']).toBeUndefined();
    expect(await reaches(taskId, 'completed')).toMatchObject({ result: { content: [{ type: 'text', text: 'Hello, Ida!' }] } });

    const running = await post(x.url, 'tools/call', { name: 'slow', arguments: { id: 'dies-with-x', ms: 60_000 } }, { caps: CAPS });
    const runningId = (running.message['result'] as { taskId: string }).taskId;
    expect((await get(runningId))['status']).toBe('working');
    await x.close();
    // Read from the store (its owner is gone): still a full result, resultType included.
    expect(await get(taskId)).toMatchObject({ status: 'completed', result: { resultType: 'complete', content: [{ text: 'Hello, Ida!' }] } });
    expect(await get(runningId)).toMatchObject({ status: 'failed', error: { data: { reason: 'instance_gone' } } });
  });
});

describe('draining one instance of a cluster', () => {
  const { prefix: drainPrefix, cleanup: drainCleanup } = redisPrefix();
  let d1: RunningGateway;
  let d2: RunningGateway;
  beforeAll(async () => {
    [d1, d2] = (await startCluster(['d1', 'd2'], {
      prefix: drainPrefix,
      mcpServers: { legacy: stdioFixture() },
      gateway: { tasks: { promoteAfterMs: 100 } },
    })) as [RunningGateway, RunningGateway];
  });
  afterAll(async () => {
    await d1?.close();
    await d2?.close();
    await drainCleanup();
  });

  it('sends new work that reaches it to another instance, finishes the parked call it holds, then leaves', async () => {
    const CAPS = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: {} };
    const parked = await post(d1.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(ir.inputRequests)[0]!;

    let drained = false;
    const draining = d1.gateway.drain(20_000).then(() => (drained = true));
    expect((await fetch(new URL('/healthz', d1.url))).status).toBe(503); // the balancer takes it out

    // New work that still reaches D1 is served by D2 (its task is D2's).
    const created = await post(d1.url, 'tools/call', { name: 'slow', arguments: { id: 'during-drain', ms: 60_000 } }, { caps: CAPS });
    expect(created.message['error']).toBeUndefined();
    const taskId = (created.message['result'] as { taskId: string }).taskId;
    expect(taskId.startsWith('d2~')).toBe(true);
    expect(drained).toBe(false); // D1 still holds the parked call
    // A legacy client's new session opens on D2 too; a listen stream is not moved (the client opens it anew).
    const init = await postInitialize(d1.url);
    expect(init.status).toBe(200);
    expect(init.headers.get('mcp-session-id')).toMatch(/^d2~/);
    await init.body?.cancel();
    const listen = await post(d1.url, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    expect(listen.status).toBe(503);

    // The parked call finishes on D1, its owner, through whichever instance the retry reaches.
    const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Dee' } } }, requestState: ir.requestState };
    const done = await post(d2.url, 'tools/call', retry, { caps: ELICIT });
    expect(done.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Dee!' }] });
    await draining; // nothing left on D1: it leaves
    expect((await post(d2.url, 'tasks/get', { taskId }, { caps: CAPS })).message['result']).toMatchObject({ taskId, status: 'working' });
    await post(d2.url, 'tasks/cancel', { taskId }, { caps: CAPS });
  });
});

describe("the proxy tools' state on a cluster", () => {
  const { prefix: proxyPrefix, cleanup: proxyCleanup } = redisPrefix();
  const ALICE = 'alice-key-cluster-0123456789';
  const BOB = 'bob-key-cluster-0123456789ab';
  let p1: RunningGateway;
  let p2: RunningGateway;
  beforeAll(async () => {
    [p1, p2] = (await startCluster(['p1', 'p2'], {
      prefix: proxyPrefix,
      mcpServers: { legacy: stdioFixture() },
      gateway: {
        apiKeys: [
          { principal: 'alice', key: ALICE },
          { principal: 'bob', key: BOB },
        ],
        proxyTools: { enabled: true, addServer: { urls: ['http://127.0.0.1:*/mcp'] } },
      },
    })) as [RunningGateway, RunningGateway];
  });
  afterAll(async () => {
    await p1?.close();
    await p2?.close();
    await proxyCleanup();
  });

  /** A proxy tool's JSON answer (its first content block). */
  async function tool(g: RunningGateway, name: string, args: Record<string, unknown> = {}, key = ALICE): Promise<Record<string, unknown>> {
    const reply = await post(g.url, 'tools/call', { name, arguments: args }, { headers: { authorization: `Bearer ${key}` } });
    const result = reply.message['result'] as { content: { text: string }[] };
    return JSON.parse(result.content[0]!.text) as Record<string, unknown>;
  }

  it("serves a principal's proxy tools where its state lives, whichever instance the call reaches", async () => {
    const ws = (await tool(p1, 'new_workspace'))['workspace'] as string; // Alice's home: P1
    const started = await tool(p2, 'execute_tool', { server: 'legacy', tool: 'slow', arguments: { id: 'home-1', ms: 300 }, timeout_ms: 20, workspace: ws });
    const taskId = (started['task'] as { taskId: string }).taskId;
    expect(taskId.startsWith('p1~')).toBe(true);
    expect((await tool(p2, 'list_tasks', { workspace: ws }))['tasks']).toEqual([expect.objectContaining({ taskId })]);
    // Its events are delivered once, wherever the agent waits for them.
    const seen: string[] = [];
    const deadline = Date.now() + 10_000;
    for (let i = 0; !seen.includes('task_completed') && Date.now() < deadline; i++) {
      const got = await tool(i % 2 ? p1 : p2, 'await_activity', { timeout_ms: 1_000, workspace: ws });
      seen.push(...(got['events'] as { events: { type: string }[] }[]).flatMap((g) => g.events.map((e) => e.type)));
    }
    expect(seen.filter((t) => t === 'task_completed')).toHaveLength(1);
    await tool(p2, 'execute_tool', { server: 'legacy', tool: 'logs' });
    const logs = (await tool(p1, 'get_logs', { server: 'legacy' }))['logs'] as { message: string }[];
    expect(logs.map((l) => l.message)).toEqual(expect.arrayContaining(['log info']));
    // Bob's state has a home of its own, and Alice's workspace means nothing to him.
    expect(await tool(p2, 'list_tasks', { workspace: ws }, BOB)).toMatchObject({ error: { code: 'TOOL_ERR_SESSION_NOT_FOUND' } });
    await tool(p2, 'await_activity', { timeout_ms: 10 }, BOB); // what Bob's home had so far

    // A server Alice adds (on her home, P1) is there for Bob on his (P2), with its event; her removal too.
    const web = await startLegacyHttpServer('web');
    try {
      expect(await tool(p2, 'add_server', { name: 'web', url: web.url })).toMatchObject({ added: 'web' });
      // (Bob's home may hold the server by now: its event then comes with this very answer.)
      const taken = split(
        await post(p1.url, 'tools/call', { name: 'add_server', arguments: { name: 'web', url: web.url } }, { headers: { authorization: `Bearer ${BOB}` } }),
      );
      expect(taken.body).toMatchObject({ error: { code: 'TOOL_ERR_INVALID_ARGUMENTS' } });
      const bobSees: string[] = (taken.events ?? []).map((e) => e.type);
      const until = Date.now() + 10_000;
      while (!bobSees.includes('server_added') && Date.now() < until) {
        const got = await tool(p1, 'await_activity', { timeout_ms: 1_000 }, BOB);
        bobSees.push(...(got['events'] as { events: { type: string }[] }[]).flatMap((g) => g.events.map((e) => e.type)));
      }
      expect(bobSees.filter((t) => t === 'server_added')).toHaveLength(1);
      expect((await tool(p1, 'execute_tool', { server: 'web', tool: 'echo', arguments: { text: 'via bob' } }, BOB))['result']).toMatchObject({
        content: [{ text: 'via bob' }],
      });
      expect(await tool(p1, 'remove_server', { name: 'web' })).toMatchObject({ removed: 'web' });
      const gone = Date.now() + 10_000;
      let names: string[] = ['web'];
      while (names.includes('web') && Date.now() < gone)
        names = ((await tool(p1, 'list_servers', {}, BOB))['servers'] as { name: string }[]).map((x) => x.name);
      expect(names).toEqual(['legacy']);
    } finally {
      await web.close();
    }

    // Alice's home leaves: her next call makes a new home; what the old one held went with it.
    await p1.close();
    expect(await tool(p2, 'list_tasks', { workspace: ws })).toMatchObject({ error: { code: 'TOOL_ERR_SESSION_NOT_FOUND' } });
    expect((await tool(p2, 'execute_tool', { server: 'legacy', tool: 'echo', arguments: { text: 'still here' } }))['result']).toMatchObject({
      content: [{ text: 'still here' }],
    });
  });
});
