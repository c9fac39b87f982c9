/**
 * The floor of any HTTP gateway on this machine: a bare `node:http` server that forwards each POSTed
 * `tools/call` (and `tools/list`) to the bench backend over stdio with the official v1 client and
 * writes the result back as JSON. No MCP HTTP transport, no checks, no state: what one HTTP hop plus
 * one stdio hop cost here. It answers just enough of each era's handshake for the SDK clients to drive
 * it as they drive a gateway: the 2026-07-28 `server/discover`, and the 2025-11-25 `initialize` with a
 * fixed session id (notifications are accepted; the v1 client's GET stream, and a DELETE, are refused
 * with 405, which the v1 client takes as "no stream offered"). A body that is not one JSON-RPC object
 * is refused with 400. Prints `URL <url>` once listening on 127.0.0.1; exits on SIGTERM.
 */
import { createServer, type ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [command, ...args] = process.argv.slice(2);
if (!command) throw new Error('usage: floor.ts <backend command> [args...]');
const client = new Client({ name: 'bench-floor', version: '1.0.0' });
const transport = new StdioClientTransport({ command, args, stderr: 'ignore' });
await client.connect(transport);
(transport as unknown as { _process?: { stdin?: { setMaxListeners(n: number): void } } })._process?.stdin?.setMaxListeners(0);

const SERVER_INFO = { name: 'bench-floor', version: '1.0.0' };
const CAPABILITIES = { tools: {} };
const SESSION = 'bench-floor-session';
type Message = { id?: number | string; method?: unknown; params?: { name?: string; arguments?: Record<string, unknown>; protocolVersion?: string } };

function reply(res: ServerResponse, id: Message['id'], body: { result: unknown } | { error: unknown }, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id, ...body }));
}

/** The result of one request: the backend's for tools, a fixed one for either era's handshake; undefined for any other method. */
async function answer(msg: Message): Promise<unknown> {
  switch (msg.method) {
    case 'tools/call': {
      const result = await client.callTool({ name: msg.params?.name ?? '', arguments: msg.params?.arguments ?? {} });
      return { ...result, resultType: 'complete' };
    }
    case 'tools/list':
      return { ...(await client.listTools()), resultType: 'complete' };
    case 'server/discover':
      return {
        supportedVersions: ['2026-07-28'],
        capabilities: CAPABILITIES,
        resultType: 'complete',
        _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
      };
    case 'initialize':
      return { protocolVersion: msg.params?.protocolVersion ?? '2025-11-25', capabilities: CAPABILITIES, serverInfo: SERVER_INFO };
    default:
      return undefined;
  }
}

/** The body as one JSON-RPC message, or undefined (not JSON, or not one object). */
function parsed(chunks: Buffer[]): Message | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Message) : undefined;
  } catch {
    return undefined;
  }
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    req.resume();
    res.writeHead(405).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const msg = parsed(chunks);
    if (!msg) {
      res.writeHead(400).end();
      return;
    }
    if (msg.id === undefined) {
      res.writeHead(202).end(); // a notification
      return;
    }
    const headers = msg.method === 'initialize' ? { 'mcp-session-id': SESSION } : {};
    answer(msg).then(
      (result) =>
        result === undefined
          ? reply(res, msg.id, { error: { code: -32601, message: `the floor does not serve ${String(msg.method)}` } })
          : reply(res, msg.id, { result }, headers),
      (e: unknown) => reply(res, msg.id, { error: { code: -32603, message: String(e) } }),
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
