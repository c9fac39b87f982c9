/**
 * The admin listener over real HTTP, in front of a real legacy stdio backend: its key (bearer, or basic
 * auth's password), its Host check, actions only with their header, never on the client port; cancel
 * a parked call (its retry gets request_state_gone) and a task; the page shows who waits on what,
 * never the input asked for or a requestState.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASKS_EXTENSION } from '../../src/protocol/rev-2026-07-28/tasks.js';
import { serveAdmin, type RunningAdmin } from '../helpers/admin.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const KEY = 'client-key-0123456789';
const ADMIN_KEY = 'admin-key-0123456789abcdef';
const TASKS = { extensions: { [TASKS_EXTENSION]: {} } };
let gw: RunningGateway;
let admin: RunningAdmin;

beforeAll(async () => {
  gw = await startGateway(
    {
      mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared', tasks: { tools: { slow: { promoteAfterMs: 0 } } } } },
      gateway: { coalesceMs: 0, apiKeys: [{ principal: 'alice', key: KEY }], admin: { port: 0, keyEnv: 'ADMIN_KEY' } },
    },
    { env: { ADMIN_KEY } },
  );
  admin = await serveAdmin(gw);
});
afterAll(async () => {
  await admin?.close();
  await gw?.close();
});

const bearer = { authorization: `Bearer ${ADMIN_KEY}` };
const adminGet = (path: string, headers: Record<string, string> = bearer) => fetch(`${admin.url}${path}`, { headers });
const action = (path: string, headers: Record<string, string> = { ...bearer, 'x-admin-action': '1' }) =>
  fetch(`${admin.url}${path}`, { method: 'POST', headers });

/** GET /metrics with the Host header a rebinding page would send (fetch cannot set Host). */
function statusWithHost(host: string): Promise<number> {
  const url = new URL(admin.url);
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: url.port, path: '/metrics', headers: { ...bearer, host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

async function rpc(params: Record<string, unknown>, caps: Record<string, unknown> = { elicitation: {} }, method = 'tools/call') {
  return (await post(gw.url, method, params, { caps, headers: { authorization: `Bearer ${KEY}` } })).message as {
    result?: Record<string, unknown>;
    error?: { code: number; data?: { reason?: string } };
  };
}

describe('the admin listener', () => {
  it('asks for its key: bearer or basic auth (any user name), and a browser is told to ask', async () => {
    const none = await adminGet('/metrics', {});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect((await adminGet('/metrics', { authorization: 'Bearer admin-key-wrong-0123456789' })).status).toBe(401);
    expect((await adminGet('/metrics')).status).toBe(200);
    const basic = `Basic ${Buffer.from(`anyone:${ADMIN_KEY}`).toString('base64')}`;
    expect((await adminGet('/', { authorization: basic })).status).toBe(200);
    // The client's own key is not the admin key.
    expect((await adminGet('/metrics', { authorization: `Bearer ${KEY}` })).status).toBe(401);
  });

  it('refuses a foreign Host (DNS rebinding) and an action without its header', async () => {
    expect(await statusWithHost('evil.example')).toBe(403);
    expect(await statusWithHost('localhost')).toBe(200);
    expect((await fetch(`${admin.url}/metrics`, { headers: { ...bearer, origin: 'http://evil.example' } })).status).toBe(403);
    // Only the page's own origin: another port on localhost is another site.
    const port = Number(new URL(admin.url).port);
    expect((await fetch(`${admin.url}/metrics`, { headers: { ...bearer, origin: `http://127.0.0.1:${port + 1}` } })).status).toBe(403);
    expect((await fetch(`${admin.url}/metrics`, { headers: { ...bearer, origin: admin.url } })).status).toBe(200);
    expect((await action('/drain', bearer)).status).toBe(403);
    expect(gw.gateway.engine.live).toBe(0);
  });

  it('is not served on the client port', async () => {
    const res = await fetch(new URL('/metrics', gw.url), { headers: bearer });
    expect(res.status).toBe(404);
  });

  it('shows a parked call (who, backend, tool, round; never its input or state) and cancels it: the retry gets request_state_gone', async () => {
    const ir = (await rpc({ name: 'elicit_name' })).result as { requestState: string; inputRequests: Record<string, unknown> };
    const page = await (await adminGet('/')).text();
    const parked = /data-call="([^"]+)"/.exec(page)?.[1];
    expect(parked).toBeDefined();
    expect(page).toContain('alice');
    expect(page).toContain('elicit_name');
    expect(page).not.toContain('What is your name?');
    expect(page).not.toContain(ir.requestState);
    expect((await action(`/calls/${parked}/cancel`)).status).toBe(200);
    expect((await action(`/calls/${parked}/cancel`)).status).toBe(404);
    const retry = await rpc({
      name: 'elicit_name',
      inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
      requestState: ir.requestState,
    });
    expect(retry.error?.data?.reason).toBe('request_state_gone');
    expect(await (await adminGet('/')).text()).not.toContain(`data-call="${parked}"`);
  });

  it('cancels a task', async () => {
    const task = (await rpc({ name: 'slow', arguments: { id: 'admin', ms: 30_000 } }, TASKS)).result as { taskId: string };
    await until('the task on the page', async () => (await (await adminGet('/')).text()).includes(task.taskId));
    expect((await action(`/tasks/${encodeURIComponent(task.taskId)}/cancel`)).status).toBe(200);
    await until('the task cancelled', async () => (await rpc({ taskId: task.taskId }, TASKS, 'tasks/get')).result?.['status'] === 'cancelled');
    expect((await action('/tasks/nope/cancel')).status).toBe(404);
  });
});

describe('the admin page stream', () => {
  it('ends when the gateway closes, at once whatever its refresh interval', async () => {
    const own = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { admin: { port: 0, refreshMs: 60_000 } } }, {});
    const ownAdmin = await serveAdmin(own);
    try {
      const res = await fetch(`${ownAdmin.url}/events`);
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toContain('event: sections');
      const ended = (async () => {
        for (;;) if ((await reader.read()).done) return true;
      })();
      await own.gateway.close();
      expect(await ended).toBe(true);
    } finally {
      await ownAdmin.close();
      await own.close();
    }
  });
});
