/**
 * The one backend every benchmark uses: a small legacy server (v1 SDK), over stdio by default or over
 * streamable HTTP on 127.0.0.1 with `--http` (prints `URL <url>`; spec/fixtures/session-http.ts).
 * Tools: `echo` (returns its text) and `ask` (elicits once, then answers).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod/v4';
import { serveSessions } from '../spec/fixtures/session-http.js';

function build(): McpServer {
  const server = new McpServer({ name: 'bench-backend', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('ask', { description: 'Elicits once' }, async (extra) => {
    const r = await server.server.elicitInput(
      { message: 'Name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
      { relatedRequestId: extra.requestId, timeout: 600_000 },
    );
    return { content: [{ type: 'text', text: `hi ${String(r.content?.['name'])}` }] };
  });
  return server;
}

if (process.argv.includes('--http')) {
  const served = await serveSessions(build);
  process.stdout.write(`URL ${served.url}\n`);
  process.on('SIGTERM', () => {
    served.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
} else {
  await build().connect(new StdioServerTransport());
}
