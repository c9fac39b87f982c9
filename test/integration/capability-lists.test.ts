/**
 * Capability-aware lists: a caller is listed the tools it can call, and can call what it is listed,
 * on every front — with the real server-everything from npm behind the gateway and the official
 * clients (SDK v2 pinned to 2026-07-28, the tasks client on it, SDK v1 on the legacy route and on
 * `/sse`, the proxy tools).
 *
 * - `get-sum` is configured `tasks.tools.get-sum.support: "required"`: the gateway serves it as a task
 *   only, so only callers that take tasks (the extension declared, or the draft dialect's hint) see it.
 * - `simulate-research-query` declares 2025-11-25 `execution.taskSupport: "required"` (the backend
 *   refuses it as a plain call): the gateway runs it as the backend's own task and waits, so every
 *   caller sees it and gets its answer — synchronously, or as a gateway task for an extension client;
 *   the backend's clarifying elicitation reaches whoever called.
 * - `trigger-elicitation-request` is shown by the backend only to clients that declared elicitation:
 *   listed to exactly those.
 */
import { fileURLToPath } from 'node:url';
import type { Client as V2Client } from '@modelcontextprotocol/client';
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASKS_EXTENSION } from '../../src/protocol/rev-2026-07-28/tasks.js';
import { taskClient } from '../helpers/ext-tasks.js';
import { connectClient, firstText, startGateway, wireViolations, type RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const pkg = (name: string, file: string): string => fileURLToPath(new URL(`../../node_modules/@modelcontextprotocol/${name}/dist/${file}`, import.meta.url));
const EVERYTHING = { command: process.execPath, args: [pkg('server-everything', 'index.js'), 'stdio'] };
const RESEARCH = 'simulate-research-query';
const TASK_ONLY = 'get-sum';
const ELICITING = 'trigger-elicitation-request';

interface Listed {
  name: string;
  execution?: { taskSupport?: string };
}
const namesOf = (tools: Listed[]): string[] => tools.map((t) => t.name);
/** No listed tool says it needs a task: every one of them is a plain call for this caller. */
const noTaskSupport = (tools: Listed[]): string[] => tools.filter((t) => t.execution?.taskSupport !== undefined).map((t) => t.name);
const textOf = (result: unknown): string => firstText(result as { content?: unknown });
/** The research report's clarification line, as the backend wrote it. */
const clarification = (text: string): string | undefined => /\*\*Clarification\*\*: (.*)/.exec(text)?.[1];

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({
    mcpServers: { everything: { ...EVERYTHING, tasks: { tools: { [TASK_ONLY]: { support: 'required', promoteAfterMs: 0 } } } } },
    gateway: { proxyTools: { enabled: true }, tasks: { pollIntervalMs: 100 } },
  });
});
afterAll(async () => {
  await gw?.close();
  expect(wireViolations).toEqual([]);
});

describe('2026-07-28 on /mcp', () => {
  let client: V2Client;
  afterAll(async () => client?.close());

  it("lists a client without the tasks extension every tool it can call, and answers the backend's task-required tool synchronously", async () => {
    client = await connectClient(gw.url, { elicitation: {} });
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(String(req.params.message));
      return { action: 'accept', content: { interpretation: 'snake' } };
    });
    const { tools } = (await client.listTools()) as { tools: Listed[] };
    expect(namesOf(tools)).toEqual(expect.arrayContaining([RESEARCH, ELICITING, 'echo']));
    expect(namesOf(tools)).not.toContain(TASK_ONLY);
    expect(noTaskSupport(tools)).toEqual([]);
    const research = await client.callTool({ name: RESEARCH, arguments: { topic: 'python', ambiguous: true } });
    expect(research.isError).not.toBe(true);
    expect(asked).toEqual([expect.stringContaining('"python" could have multiple interpretations')]);
    expect(clarification(firstText(research))).toBe('snake');
    // Called anyway, the unlisted tool says what it needs.
    await expect(client.callTool({ name: TASK_ONLY, arguments: { a: 1, b: 2 } })).rejects.toMatchObject({ code: -32021 });
  });

  it('lists the task-only tool to callers that take tasks (the extension on /mcp, the task hint on /mcp/draft), and both task tools run to their results', async () => {
    const tasks = await taskClient(gw.url);
    try {
      const { tools } = (await tasks.client.listTools()) as { tools: Listed[] };
      expect(namesOf(tools)).toEqual(expect.arrayContaining([RESEARCH, TASK_ONLY]));
      expect(noTaskSupport(tools)).toEqual([]);
      const draft = await post(`${gw.url}/draft`, 'tools/list', {}, { caps: {} });
      expect(namesOf((draft.message['result'] as { tools: Listed[] }).tools)).toEqual(expect.arrayContaining([RESEARCH, TASK_ONLY]));
      const [research, sum] = await Promise.all([tasks.session.callTool(RESEARCH, { topic: 'tides' }), tasks.session.callTool(TASK_ONLY, { a: 1, b: 2 })]);
      expect([research.kind, sum.kind]).toEqual(['task', 'task']);
      const [researched, summed] = await Promise.all([research.settle(), sum.settle()]);
      expect(researched.outcome.status, JSON.stringify(researched.outcome)).toBe('completed');
      expect(firstText(resultFromTaskOutcome(researched.outcome) as { content: unknown })).toMatch(/^# Research Report: tides/);
      expect(summed.outcome.status).toBe('completed');
      expect(firstText(resultFromTaskOutcome(summed.outcome) as { content: unknown })).toBe('The sum of 1 and 2 is 3.');
    } finally {
      await tasks.close();
    }
  });
});

describe('the legacy route', () => {
  async function v1(transport: 'streamable' | 'sse', capabilities: ClientCapabilities): Promise<Client> {
    const client = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities });
    if (capabilities.elicitation) client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { interpretation: 'comedy' } }));
    const url = new URL(gw.url);
    await client.connect(transport === 'sse' ? new SSEClientTransport(new URL('/sse', url)) : new StreamableHTTPClientTransport(url));
    return client;
  }

  it('lists a 2025-11-25 session (task support declared or not: this route makes no tasks) and a 2024-11-05 SSE client what they can call, and each listed task tool is a plain call', async () => {
    const plain = await v1('streamable', { elicitation: {} });
    // 2025-11-25 task support, and even the 2026-07-28 extension: neither makes this route hand out tasks.
    const tasking = await v1('streamable', {
      elicitation: {},
      tasks: { list: {}, cancel: {}, requests: { elicitation: { create: {} } } },
      extensions: { [TASKS_EXTENSION]: {} },
    } as ClientCapabilities);
    const sse = await v1('sse', {});
    try {
      for (const client of [plain, tasking, sse]) {
        const { tools } = (await client.listTools()) as { tools: Listed[] };
        expect(namesOf(tools)).toContain(RESEARCH);
        expect(namesOf(tools)).not.toContain(TASK_ONLY);
        // Shown by the backend only to clients that declared elicitation.
        if (client === sse) expect(namesOf(tools)).not.toContain(ELICITING);
        else expect(namesOf(tools)).toContain(ELICITING);
        // A v1 client refuses to call a tool listed `taskSupport: "required"` as a plain call.
        expect(noTaskSupport(tools)).toEqual([]);
        await expect(client.callTool({ name: TASK_ONLY, arguments: { a: 1, b: 2 } })).rejects.toMatchObject({ code: -32021 });
      }
      const [asked, told, streamed] = await Promise.all([
        plain.callTool({ name: RESEARCH, arguments: { topic: 'python', ambiguous: true } }),
        tasking.callTool({ name: RESEARCH, arguments: { topic: 'tides' } }),
        sse.callTool({ name: RESEARCH, arguments: { topic: 'sse' } }),
      ]);
      // The backend's clarifying question reached the session's client as a real elicitation.
      expect(clarification(textOf(asked))).toBe('comedy');
      expect(textOf(told)).toMatch(/^# Research Report: tides/);
      expect(textOf(streamed)).toMatch(/^# Research Report: sse/);
    } finally {
      await Promise.all([plain.close(), tasking.close(), sse.close()]);
    }
  });
});

describe('the proxy tools', () => {
  it('list every backend tool, and execute_tool runs the task ones too (it makes its own tasks)', async () => {
    const client = await connectClient(gw.url, {});
    try {
      const body = (r: unknown): Record<string, unknown> => JSON.parse(firstText(r as { content: unknown })) as Record<string, unknown>;
      const listed = body(await client.callTool({ name: 'list_tools', arguments: {} }))['tools'] as Listed[];
      expect(namesOf(listed)).toEqual(expect.arrayContaining([RESEARCH, TASK_ONLY, ELICITING]));
      const [research, sum] = await Promise.all([
        client.callTool({ name: 'execute_tool', arguments: { server: 'everything', tool: RESEARCH, arguments: { topic: 'proxy' } } }),
        client.callTool({ name: 'execute_tool', arguments: { server: 'everything', tool: TASK_ONLY, arguments: { a: 2, b: 3 } } }),
      ]);
      expect(firstText((body(research)['result'] as { content: unknown }) ?? {})).toMatch(/^# Research Report: proxy/);
      expect(firstText((body(sum)['result'] as { content: unknown }) ?? {})).toBe('The sum of 2 and 3 is 5.');
    } finally {
      await client.close();
    }
  });
});

describe('a tool that declares taskSupport, called first with capabilities nobody listed with', () => {
  it('is promoted at once, its declaration read from the list another view holds', async () => {
    const fresh = await startGateway({ mcpServers: { everything: EVERYTHING } });
    try {
      const backend = fresh.gateway.backends[0]!;
      await until('the tools prefetched at start', () => backend.cachedList('tools') !== undefined);
      const caps = { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } };
      const r = await post(fresh.url, 'tools/call', { name: RESEARCH, arguments: { topic: 'x', ambiguous: true } }, { caps });
      expect(r.message['result']).toMatchObject({ resultType: 'task' });
    } finally {
      await fresh.close();
    }
  });
});
