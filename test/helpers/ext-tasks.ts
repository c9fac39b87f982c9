/**
 * The official tasks client, `@modelcontextprotocol/ext-tasks`, with its default decoder, on an SDK v2
 * client pinned to 2026-07-28 over real HTTP. The package needs a host request path for the 2026-07-28
 * task wire (`rawDispatch`, with the framing the client was initialized with): the SDK client rejects
 * `resultType: "task"`. Ours is one POST with the standard headers, checked against the wire rules
 * like every other gateway reply.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type JsonRpcResponse, type RawClientDispatch, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { TASKS_EXTENSION } from '../../src/protocol/rev-2026-07-28/tasks.js';
import { validatingFetch } from './gateway.js';
import { assertWireResponse, post } from './wire.js';

const CLIENT_INFO = { name: 'ext-tasks-test', version: '1.0.0' };
/** What the task clients declare: the tasks extension, and form elicitation. */
export const TASK_CLIENT_CAPABILITIES = { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } };

export interface TaskClient {
  readonly client: Client;
  readonly session: TaskEnabledSession;
  /** Every tasks/get result the gateway sent to this client. */
  readonly polled: Record<string, unknown>[];
  /** Every notification the SDK client handed on (notifications/tasks among them). */
  readonly notified: Record<string, unknown>[];
  close(): Promise<void>;
}

export interface TaskClientOptions {
  /** Sent with every request (an `authorization` header, say). */
  readonly headers?: Record<string, string>;
  /** Answers an elicitation the task asks for (its message in, the ElicitResult out). */
  readonly onInput?: (message: string) => Record<string, unknown>;
  /** Declared instead of TASK_CLIENT_CAPABILITIES (the tasks extension is added). */
  readonly capabilities?: Record<string, unknown>;
}

/** The host request path the package asks for: one checked JSON-RPC POST per request. */
function rawDispatchTo(url: string, headers: Record<string, string>, polled: Record<string, unknown>[]): RawClientDispatch {
  return async (request, options) => {
    const { method, params } = request as { method: string; params: Record<string, unknown> };
    const { _meta: meta, ...rest } = params;
    // The package names the task in `Mcp-Name` itself; the helper derives the same from the params.
    const extra = Object.fromEntries(Object.entries(options?.context?.headers ?? {}).filter(([k]) => k.toLowerCase() !== 'mcp-name'));
    const reply = await post(url, method, rest, {
      meta: meta as Record<string, unknown>,
      headers: { ...extra, ...headers },
      ...(options?.signal ? { signal: options.signal } : {}),
    });
    assertWireResponse(method, reply.message);
    const { result, error } = reply.message as { result?: Record<string, unknown>; error?: { code: number; message: string } };
    if (method === 'tasks/get' && result) polled.push(result);
    return (error ? { kind: 'error', error } : { kind: 'result', result }) as JsonRpcResponse;
  };
}

/** An SDK v2 client pinned to 2026-07-28 with an ext-tasks session on it (the package's defaults). */
export async function taskClient(url: string, opts: TaskClientOptions = {}): Promise<TaskClient> {
  const headers = opts.headers ?? {};
  const capabilities = opts.capabilities ? { ...opts.capabilities, extensions: { [TASKS_EXTENSION]: {} } } : TASK_CLIENT_CAPABILITIES;
  const client = new Client(CLIENT_INFO, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: validatingFetch }));
  const notified: Record<string, unknown>[] = [];
  // The session chains to the handler it finds, so this sees what the session sees.
  client.fallbackNotificationHandler = async (n) => {
    notified.push(n as unknown as Record<string, unknown>);
  };
  const polled: Record<string, unknown>[] = [];
  const onInput = opts.onInput;
  const session = createTaskSessionFromClient(client, {
    endpointId: 'gateway-under-test',
    rawDispatch: rawDispatchTo(url, headers, polled),
    v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo: CLIENT_INFO, clientCapabilities: capabilities },
    ...(onInput
      ? {
          onInputRequest: async (request: { kind: string; params?: Readonly<Record<string, unknown>> }) => {
            if (request.kind !== 'elicitation') throw new Error(`unexpected input request ${request.kind}`);
            return onInput(String(request.params?.['message'])) as never;
          },
        }
      : {}),
  });
  return {
    client,
    session,
    polled,
    notified,
    async close() {
      await session.close();
      await client.close();
    },
  };
}
