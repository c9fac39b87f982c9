/**
 * The bundled demo backend: a legacy (2025-11-25) MCP server over stdio, built with the v1 SDK the way
 * real legacy servers are. Its tools ask for input mid-call — exactly what the gateway turns into
 * `input_required` rounds for 2026-07-28 clients.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

const server = new McpServer({ name: 'mcp-mrtr-gateway-demo', version: '0.1.0' }, { capabilities: { logging: {} } });
const ask = (extra: Extra, message: string, properties: Record<string, object>, required: string[]) =>
  server.server.elicitInput({ message, requestedSchema: { type: 'object', properties, required } } as never, { relatedRequestId: extra.requestId });

server.registerTool('echo', { description: 'Echoes the text back.', inputSchema: { text: z.string() } }, async ({ text: t }) => text(t));

server.registerTool('add', { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => text(String(a + b)));

server.registerTool('greet', { description: 'Asks for your name (one elicitation round), then greets you.' }, async (extra) => {
  const r = await ask(extra, 'What is your name?', { name: { type: 'string', title: 'Name' } }, ['name']);
  return text(r.action === 'accept' ? `Hello, ${String(r.content?.['name'])}!` : `No name given (${r.action}).`);
});

server.registerTool('book_table', { description: 'Books a table: asks for the date, then the party size (two rounds).' }, async (extra) => {
  const date = await ask(extra, 'Which date?', { date: { type: 'string', format: 'date' } }, ['date']);
  if (date.action !== 'accept') return text('Booking abandoned.');
  const size = await ask(extra, `How many people on ${String(date.content?.['date'])}?`, { people: { type: 'integer', minimum: 1 } }, ['people']);
  if (size.action !== 'accept') return text('Booking abandoned.');
  return text(`Booked a table for ${String(size.content?.['people'])} on ${String(date.content?.['date'])}.`);
});

server.registerTool(
  'summarize',
  { description: "Summarizes text with the client's model (sampling).", inputSchema: { text: z.string() } },
  async ({ text: t }, extra) => {
    const r = await server.server.createMessage(
      { messages: [{ role: 'user', content: { type: 'text', text: `Summarize in one sentence:\n${t}` } }], maxTokens: 200 },
      { relatedRequestId: extra.requestId },
    );
    return text(r.content.type === 'text' ? `Summary: ${r.content.text}` : 'Summary: (non-text answer)');
  },
);

server.registerTool('list_roots', { description: "Lists the client's roots." }, async (extra) => {
  const r = await server.server.listRoots(undefined, { relatedRequestId: extra.requestId });
  return text(r.roots.length ? r.roots.map((x) => `${x.name ?? ''} ${x.uri}`.trim()).join('\n') : 'No roots.');
});

server.registerTool('plan_trip', { description: 'Asks for a destination and samples an idea at the same time (two inputs in one round).' }, async (extra) => {
  const [where, idea] = await Promise.all([
    ask(extra, 'Where to?', { city: { type: 'string' } }, ['city']),
    server.server.createMessage(
      { messages: [{ role: 'user', content: { type: 'text', text: 'Suggest a day trip activity.' } }], maxTokens: 100 },
      { relatedRequestId: extra.requestId },
    ),
  ]);
  return text(
    `Trip to ${where.action === 'accept' ? String(where.content?.['city']) : 'somewhere'}: ${idea.content.type === 'text' ? idea.content.text : '...'}`,
  );
});

server.registerTool(
  'count',
  {
    description: 'Counts to n, reporting progress.',
    inputSchema: { n: z.number().int().min(1).max(100).default(5), delayMs: z.number().int().min(0).max(5000).default(100) },
  },
  async ({ n, delayMs }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= n; i++) {
      await new Promise((r) => setTimeout(r, delayMs));
      if (token !== undefined)
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n, message: `counted ${i}` } });
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: `count ${i}/${n}` } });
    }
    return text(`Counted to ${n}.`);
  },
);

server.registerTool(
  'long_task',
  { description: 'Runs for ms milliseconds unless cancelled.', inputSchema: { ms: z.number().int().min(0).max(600_000).default(10_000) } },
  async ({ ms }, extra) => {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      extra.signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
    return text(extra.signal.aborted ? 'cancelled' : `Finished after ${ms} ms.`);
  },
);

server.registerPrompt('haiku', { description: 'A haiku about a topic.', argsSchema: { topic: z.string() } }, ({ topic }) => ({
  messages: [{ role: 'user', content: { type: 'text', text: `Write a haiku about ${topic}.` } }],
}));

server.registerResource('readme', 'demo://readme', { mimeType: 'text/plain', description: 'About this demo.' }, async (uri) => ({
  contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the mcp-mrtr-gateway demo backend (a legacy 2025-11-25 server).' }],
}));

await server.connect(new StdioServerTransport());
// The gateway went away (its end of the pipe closed): so does this process, whatever it was waiting for.
process.stdin.once('end', () => process.exit(0));
