/**
 * The one backend every benchmark uses: a small legacy server (v1 SDK), over stdio by default or over
 * streamable HTTP on 127.0.0.1 with `--http` (prints `URL <url>`). Tools: `echo` (returns its text) and
 * `ask` (elicits once, then answers).
 */
import { randomUUID } from 'node:crypto';
import { serve } from '@hono/node-server';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import * as z from 'zod/v4';

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
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const server = serve(
    {
      hostname: '127.0.0.1',
      port: 0,
      fetch: async (req) => {
        const sid = req.headers.get('mcp-session-id');
        const known = sid ? transports.get(sid) : undefined;
        if (known) return known.handleRequest(req);
        if (sid) return new Response('unknown session', { status: 404 });
        const t = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void transports.set(id, t),
          onsessionclosed: (id) => void transports.delete(id),
        });
        await build().connect(t);
        return t.handleRequest(req);
      },
    },
    (info) => process.stdout.write(`URL http://127.0.0.1:${info.port}/mcp\n`),
  );
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
} else {
  await build().connect(new StdioServerTransport());
}
