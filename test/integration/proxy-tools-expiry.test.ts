/**
 * Pending client actions never leave silently (seed 001, PendingRequestsManager): a sampling request
 * nobody answers within `gateway.sampling.timeoutMs`, and an elicitation whose server is removed
 * (`remove_server`), end with `sampling_expired` / `elicitation_expired` (and why), and are gone from
 * `pending_client_action`; an execute_tool task nobody answers within its server's `parkTimeoutMs` fails
 * (`input_timeout`). Real gateway, real backends (the legacy fixture over stdio and as an HTTP
 * process), real HTTP. (A backend that restarts: proxy-tools.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { startHttpBackendProcess } from '../helpers/processes.js';
import { eventOf, proxyCaller, type ToolCaller } from '../helpers/proxy-tools.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

let http: Awaited<ReturnType<typeof startHttpBackendProcess>>;
let gw: RunningGateway;
let call: ToolCaller;

beforeAll(async () => {
  http = await startHttpBackendProcess();
  gw = await startGateway({
    mcpServers: { legacy: stdioFixture(), short: { ...stdioFixture(), parkTimeoutMs: 1_000 } },
    gateway: { sampling: { timeoutMs: 300 }, proxyTools: { enabled: true, addServer: { urls: [http.url] } } },
  });
  call = proxyCaller(gw.url);
});
afterAll(async () => {
  await gw?.close();
  http?.child.kill('SIGKILL');
});

describe('pending client actions that end unanswered', () => {
  it('reports a sampling request nobody answered in time as sampling_expired, and drops it from pending_client_action', async () => {
    const started = await call('execute_tool', { server: 'legacy', tool: 'sample', arguments: { prompt: 'Capital?' } });
    expect(started.body).toMatchObject({ needs_input: true, task: { status: 'input_required' } });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    const [request] = started.pending!.sampling_requests as { requestId: string }[];

    const seen = await eventOf(call, 'sampling_expired');
    expect(seen.at(-1)).toMatchObject({
      server: 'legacy',
      data: { requestId: request!.requestId, taskId, reason: 'timed_out', message: expect.stringContaining('gateway.sampling.timeoutMs') },
    });
    const after = await call('get_sampling_requests');
    expect(after.body).toEqual({ sampling_requests: [] });
    expect(after.pending).toBeUndefined();
    // Too late: the backend was told (it ended its call with the timeout), and the request is gone.
    const late = await call('respond_to_sampling', { requestId: request!.requestId, content: { type: 'text', text: 'Paris' }, model: 'm' });
    expect(late.body).toMatchObject({ error: { code: 'TOOL_ERR_REQUEST_NOT_FOUND' } });
    await eventOf(call, 'task_completed', (e) => e.data['taskId'] === taskId);
    expect(JSON.stringify((await call('get_task_result', { taskId })).body)).toMatch(/did not answer the sampling request within 300 ms/);
  });

  it('reports the elicitation of a removed server as elicitation_expired (server_removed), and its task as failed', async () => {
    expect((await call('add_server', { name: 'web', url: http.url })).body).toMatchObject({ added: 'web', connected: true });
    const started = await call('execute_tool', { server: 'web', tool: 'elicit_name' });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    const requestId = ((started.pending ?? (await call('get_elicitations')).body) as { elicitations: { requestId: string }[] }).elicitations[0]?.requestId;
    expect(requestId).toBeDefined();

    expect((await call('remove_server', { name: 'web' })).body).toEqual({ removed: 'web' });
    const seen = await eventOf(call, 'task_failed', (e) => e.data['taskId'] === taskId);
    const expired = seen.find((e) => e.type === 'elicitation_expired');
    expect(expired).toMatchObject({ server: 'web', data: { requestId, taskId, reason: 'server_removed' } });
    expect(seen.indexOf(expired!)).toBeLessThan(seen.length - 1); // before its task's end
    await eventOf(call, 'server_removed', (e) => e.server === 'web'); // once its sessions are closed (seed 000, phase 5)
    expect((await call('get_elicitations')).body).toEqual({ elicitations: [] });
    expect((await call('get_task', { taskId })).body).toMatchObject({ task: { status: 'failed' } });
  });

  it("parks an execute_tool round as long as its server's parkTimeoutMs, not the requestState's 600 s", async () => {
    const ELICIT = { elicitation: {} };
    const params = { name: 'execute_tool', arguments: { server: 'short', tool: 'elicit_name' } };
    const first = await post(gw.url, 'tools/call', params, { caps: ELICIT });
    const ir = first.message['result'] as { resultType: string; inputRequests: Record<string, unknown>; requestState: string };
    expect(ir.resultType).toBe('input_required');
    await until('the parked call to be given up after 1 s', () => gw.gateway.engine.live === 0, 10_000);
    const key = Object.keys(ir.inputRequests)[0]!;
    const late = await post(
      gw.url,
      'tools/call',
      { ...params, inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState },
      { caps: ELICIT },
    );
    // The call is over: the late answer is refused, and told to start again.
    expect(late.message['error']).toMatchObject({
      data: { reason: expect.stringMatching(/^(request_state_gone|request_state_stale|backend_request_expired)$/) },
    });
    expect((late.message['error'] as { message: string }).message).toMatch(/start the request again/i);
  });

  it("fails an execute_tool task nobody answered within its server's parkTimeoutMs (input_timeout), and drops its elicitation", async () => {
    const started = await call('execute_tool', { server: 'short', tool: 'elicit_name' });
    expect(started.body).toMatchObject({ needs_input: true, task: { status: 'input_required' } });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    const seen = await eventOf(call, 'task_failed', (e) => e.data['taskId'] === taskId);
    expect(seen.some((e) => e.type === 'elicitation_expired' && e.data['taskId'] === taskId)).toBe(true);
    expect(JSON.stringify((await call('get_task_result', { taskId })).body)).toMatch(/parkTimeoutMs/);
    expect((await call('get_elicitations')).body).toEqual({ elicitations: [] });
  });

  it('says nothing of the kind for a request the client answered', async () => {
    const started = await call('execute_tool', { server: 'legacy', tool: 'elicit_name' });
    const taskId = (started.body['task'] as { taskId: string }).taskId;
    const [question] = started.pending!.elicitations as { requestId: string }[];
    await call('respond_to_elicitation', { requestId: question!.requestId, action: 'accept', content: { name: 'Ada' } });
    const seen = await eventOf(call, 'task_completed', (e) => e.data['taskId'] === taskId);
    expect(seen.filter((e) => e.data['requestId'] === question!.requestId).map((e) => e.type)).toEqual(['elicitation_request']);
  });
});
