// @ts-check
/**
 * The one backend every benchmark uses: a small legacy server (v1 SDK). Run directly it serves stdio
 * (plain JavaScript, so each stdio backend process starts without a TypeScript loader: lighter and
 * quicker when the gateway holds many of them); bench/backend.ts serves the same tools over streamable
 * HTTP. Tools: `echo` (returns its text) and `ask` (elicits once, then answers).
 */
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod/v4';

/** A new server with the bench's two tools. */
export function build() {
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

if (process.argv[1] === fileURLToPath(import.meta.url)) await build().connect(new StdioServerTransport());
