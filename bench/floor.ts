/**
 * The floor of any HTTP gateway on this machine: a bare `node:http` server that forwards each POSTed
 * `tools/call` to the bench backend over stdio with the official v1 client and writes the result back
 * as JSON. No MCP HTTP transport, no checks, no sessions, no state: what one HTTP hop plus one stdio hop
 * cost here. Prints `URL <url>` once listening on 127.0.0.1; exits on SIGTERM.
 */
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [command, ...args] = process.argv.slice(2);
if (!command) throw new Error('usage: floor.ts <backend command> [args...]');
const client = new Client({ name: 'bench-floor', version: '1.0.0' });
const transport = new StdioClientTransport({ command, args, stderr: 'ignore' });
await client.connect(transport);
(transport as unknown as { _process?: { stdin?: { setMaxListeners(n: number): void } } })._process?.stdin?.setMaxListeners(0);

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const msg = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number; params: { name: string; arguments: Record<string, unknown> } };
    client.callTool({ name: msg.params.name, arguments: msg.params.arguments }).then(
      (result) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { ...result, resultType: 'complete' } }));
      },
      (e: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: String(e) } }));
      },
    );
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') process.stdout.write(`URL http://127.0.0.1:${address.port}/mcp\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  client.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
