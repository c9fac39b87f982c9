/**
 * The clients that drive the systems. The headline figures use the official SDK clients only: v1 (`@modelcontextprotocol/sdk`) against the peers and the gateway's
 * legacy session route, v2 (`@modelcontextprotocol/client`, pinned to 2026-07-28, which answers an
 * `input_required` itself through its elicitation handler) against the gateway's `/mcp`. A bare `fetch`
 * client (`rpc`) drives the context rows, the floor and the rounds split across two instances.
 */
import { Client as V2Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Agent, setGlobalDispatcher } from 'undici';

/**
 * Every client here (bare `fetch` and the SDKs' HTTP transports, which call `fetch`) goes through undici
 * 7's Agent, set once when the bench loads. Before, which one it got depended on import order: loading
 * miniflare (the edge phase) installs its own undici's Agent as the process-wide dispatcher, in place of
 * Node 20's built-in one, and the CPU pair moves with the client.
 */
setGlobalDispatcher(new Agent());

const ANSWER = { action: 'accept', content: { name: 'Ada' } } as const;
/** What `ask` answers once its elicitation was answered with `ANSWER`. */
const ASKED = 'hi Ada';

/**
 * Throws unless `result` is the answer of an `ask` whose elicitation was answered: a round that did
 * not happen (a gateway that cannot elicit gets the tool's error result instead) is no round at all.
 * mcp-proxy 6.x, for one, initialises its backend without capabilities: its `ask` is refused at once.
 */
export function expectAsked(result: unknown): void {
  const content = (result as { content?: { text?: unknown }[] } | undefined)?.content;
  if (content?.[0]?.text !== ASKED) throw new Error(`not an elicitation round: ${JSON.stringify(result).slice(0, 200)}`);
}
/** The capabilities a client that can be asked declares (in `_meta` for 2026-07-28, at `initialize` before). */
export const ELICIT = { elicitation: {} };

/** Per-request `_meta`: a plain client declares no input capability; `ask` is called by one that can be asked. */
const metaFor = (caps: Record<string, unknown>) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': caps,
});

let nextId = 1;
/** One 2026-07-28 request with a bare `fetch` (keep-alive, no schema checks); throws unless it has a result. */
export async function rpc(url: string, method: string, params: Record<string, unknown>, caps: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const name = (params['name'] as string | undefined) ?? undefined;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: metaFor(caps) } }),
  });
  const body = (await res.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (!body.result) throw new Error(`rpc failed: ${JSON.stringify(body.error)}`);
  return body.result;
}

/** The retry of an `input_required` answer to `ask`: the answer keyed like the request, the requestState echoed. */
function retryParams(first: Record<string, unknown>): Record<string, unknown> {
  const key = Object.keys(first['inputRequests'] as object)[0]!;
  return { name: 'ask', arguments: {}, inputResponses: { [key]: ANSWER }, requestState: first['requestState'] };
}

/** One MRTR round of `ask` with bare `fetch`: the call on `url`, its retry on `retryUrl` (default: the same). */
export const fetchRound =
  (url: string, retryUrl = url) =>
  async (): Promise<void> => {
    const first = await rpc(url, 'tools/call', { name: 'ask', arguments: {} }, ELICIT);
    expectAsked(await rpc(retryUrl, 'tools/call', retryParams(first), ELICIT));
  };

/** The same round, but only the retry is timed (ms): what a retry costs on its owner or forwarded. */
export const timedRetry = (url: string, retryUrl: string) => async (): Promise<number> => {
  const first = await rpc(url, 'tools/call', { name: 'ask', arguments: {} }, ELICIT);
  const t0 = performance.now();
  const answer = await rpc(retryUrl, 'tools/call', retryParams(first), ELICIT);
  const ms = performance.now() - t0;
  expectAsked(answer);
  return ms;
};

/**
 * The official v1 client over streamable HTTP (a peer, or the gateway's legacy route). With `caps`
 * `ELICIT` it declares elicitation and answers it; without, it is a plain client (what pass-through
 * calls are measured with: a call that declares an input capability takes a backend session of its
 * own in the gateway's stdio pool).
 */
export async function v1Client(url: string, caps: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client({ name: 'bench-v1', version: '1.0.0' }, { capabilities: caps });
  if ('elicitation' in caps) client.setRequestHandler(ElicitRequestSchema, async () => ANSWER);
  await client.connect(new V1StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** The official v2 client pinned to 2026-07-28 (the gateway's `/mcp`); with `ELICIT` it answers `input_required` rounds itself. */
export async function v2Client(url: string, caps: Record<string, unknown> = {}): Promise<V2Client> {
  const client = new V2Client({ name: 'bench-v2', version: '1.0.0' }, { capabilities: caps, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  if ('elicitation' in caps) client.setRequestHandler('elicitation/create', async () => ANSWER);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** The official v1 client straight to the backend over stdio (what a desktop host does); `pid` is the backend's. */
export async function directClient(command: readonly string[]): Promise<{ client: Client; pid: number }> {
  const client = new Client({ name: 'bench-direct', version: '1.0.0' }, { capabilities: ELICIT });
  client.setRequestHandler(ElicitRequestSchema, async () => ANSWER);
  const transport = new StdioClientTransport({ command: command[0]!, args: command.slice(1), stderr: 'ignore' });
  await client.connect(transport);
  // Many concurrent writes each wait for `drain` on the pipe: expected, not a leak (as in the gateway).
  (transport as unknown as { _process?: { stdin?: { setMaxListeners(n: number): void } } })._process?.stdin?.setMaxListeners(0);
  return { client, pid: transport.pid ?? 0 };
}
