/**
 * No doubled error prefixes: an error a backend answers a tool call with shows at most one
 * `MCP error <code>:` prefix as the client prints it, on every front — 2026-07-28 on /mcp (SDK v2
 * client), the legacy route and /sse (SDK v1 client, which adds its one), the proxy tools'
 * `execute_tool`, and a task that fails (the official tasks client). And the other way round: a
 * client's error for a backend's input request reaches the backend with the one prefix its SDK adds.
 *
 * The backend error is the legacy fixture's `fail_rpc`: a JSON-RPC -32602 answer to `tools/call`, sent
 * by the v1 SDK with its own prefix already in the message.
 */
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ErrorCode, McpError, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskClient } from '../helpers/ext-tasks.js';
import { connectClient, firstText, startGateway, stdioFixture, wireViolations, type RunningGateway } from '../helpers/gateway.js';

const BACKEND_TEXT = 'No report has that id';

/** How many `MCP error <code>:` prefixes a printed message carries. */
const prefixes = (message: string): number => message.match(/MCP error -?\d+:/g)?.length ?? 0;
/** What a client prints for a call that should fail. */
const printed = async (p: Promise<unknown>): Promise<string> =>
  p.then(
    (r) => `resolved: ${JSON.stringify(r)}`,
    (e: unknown) => (e as Error).message,
  );

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({
    // A task at once for a client of the tasks extension: the failure ends a task.
    mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared', tasks: { tools: { fail_rpc: { promoteAfterMs: 0 } } } } },
    gateway: { proxyTools: { enabled: true }, tasks: { pollIntervalMs: 100 } },
  });
});
afterAll(async () => {
  await gw?.close();
  expect(wireViolations).toEqual([]);
});

async function v1(transport: 'streamable' | 'sse', capabilities: ClientCapabilities = {}): Promise<Client> {
  const client = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities });
  const url = new URL(gw.url);
  await client.connect(transport === 'sse' ? new SSEClientTransport(new URL('/sse', url)) : new StreamableHTTPClientTransport(url));
  return client;
}

describe('errors crossing the gateway', () => {
  it("carry at most one \"MCP error <code>:\" prefix: a backend's error for a tool call as each front's client prints it, and a client's error as the backend gets it", async () => {
    const modern = await connectClient(gw.url, {});
    const [streamable, sse, refusing] = await Promise.all([v1('streamable'), v1('sse'), v1('streamable', { elicitation: {} })]);
    refusing.setRequestHandler(ElicitRequestSchema, async () => {
      throw new McpError(ErrorCode.InvalidRequest, 'the user closed the dialog');
    });
    // Clients that declare nothing the backend could ask: one backend session serves all their calls.
    const tasks = await taskClient(gw.url, { capabilities: {} });
    try {
      const execution = await tasks.session.callTool('fail_rpc', { id: 'task' });
      expect(execution.kind).toBe('task');
      const [onMcp, onLegacy, onSse, viaProxy, inTask, refused] = await Promise.all([
        printed(modern.callTool({ name: 'fail_rpc', arguments: { id: 'mcp' } })),
        printed(streamable.callTool({ name: 'fail_rpc', arguments: { id: 'legacy' } })),
        printed(sse.callTool({ name: 'fail_rpc', arguments: { id: 'sse' } })),
        modern
          .callTool({ name: 'execute_tool', arguments: { server: 'legacy', tool: 'fail_rpc', arguments: { id: 'proxy' } } })
          .then((r) => (JSON.parse(firstText(r)) as { error: { message: string } }).error.message),
        execution.settle().then(({ outcome }) => printed(Promise.resolve().then(() => resultFromTaskOutcome(outcome)))),
        // The fixture's tool answers with the error its elicitation got, as its own SDK printed it.
        refusing.callTool({ name: 'elicit_refused', arguments: {} }).then((r) => firstText(r as { content?: unknown })),
      ]);
      for (const [front, message] of Object.entries({ onMcp, onLegacy, onSse, viaProxy, inTask })) {
        expect(message, front).toContain(BACKEND_TEXT);
        expect(prefixes(message), `${front}: ${message}`).toBeLessThanOrEqual(1);
      }
      // The v1 client prints its one.
      expect(onLegacy).toBe(`MCP error -32602: ${BACKEND_TEXT}`);
      expect(onSse).toBe(`MCP error -32602: ${BACKEND_TEXT}`);
      // The backend's SDK adds its one to what the gateway relays of the client's error, and no more.
      expect(refused).toBe('client error -32600: MCP error -32600: the user closed the dialog');
    } finally {
      await Promise.all([modern.close(), streamable.close(), sse.close(), refusing.close(), tasks.close()]);
    }
  });
});
