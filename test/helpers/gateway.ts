/**
 * Test harness: a real gateway on a real socket (127.0.0.1, port 0) in front of real backends, and
 * official SDK v2 clients pinned to 2026-07-28.
 */
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { parseConfig, type GatewayConfig } from '../../src/config.js';
import { createGateway, type Gateway, type GatewayDeps } from '../../src/gateway.js';
import { randomStateKey, type StateKey } from '../../src/protocol/request-state.js';
import { nodeArgs } from './built.js';
import { until } from './until.js';
import { assertWireNotification, assertWireResponse } from './wire.js';

/**
 * Every message the gateway sent to a client made by `connectClient` is checked against the wire
 * rules (helpers/wire.ts); violations collect here and each suite asserts the list is empty.
 */
export const wireViolations: string[] = [];
const LISTEN = 'subscriptions/listen';

/**
 * `checked`: replies checked; `pending`: replies whose response message has not been checked yet
 * (but `subscriptions/listen` streams, whose response comes when they end).
 */
export const wireStats = { checked: 0, pending: 0 };

/**
 * Waits until every reply a validating fetch carried has had its response message checked: the
 * checks read a copy of each reply, a moment after the client read its own.
 */
export function wireChecked(): Promise<void> {
  return until('every wire check to finish', () => wireStats.pending === 0);
}

/**
 * Checks one reply as it streams: each notification, then the response (the message with `result` or
 * `error`); done at the response, which a client that got its answer has read too (an SSE reply may
 * stay open after it). A reply that ends without one is checked as an empty response.
 */
async function checkReply(method: string, res: Response): Promise<void> {
  const check = (m: Record<string, unknown>): boolean => {
    const response = 'result' in m || 'error' in m;
    try {
      if (response) assertWireResponse(method, m);
      // A listen stream's notifications are its own (acknowledged, list changes, tasks), not a call's.
      else if (method !== LISTEN) assertWireNotification(m);
    } catch (e) {
      wireViolations.push(`${method}: ${(e as Error).message.slice(0, 500)}`);
    }
    return response;
  };
  try {
    if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const text = await res.text();
      check(text ? (JSON.parse(text) as Record<string, unknown>) : {});
      return;
    }
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      // An empty `data:` is a resumability priming event (an event id, no message).
      for (const l of lines.filter((l) => l.startsWith('data:') && l.slice(5).trim() !== '')) {
        if (check(JSON.parse(l.slice(5)) as Record<string, unknown>)) {
          void reader.cancel().catch(() => undefined);
          return;
        }
      }
    }
    check({});
  } finally {
    wireStats.checked++;
  }
}

/** A fetch that checks every gateway reply it carries. */
export const validatingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const res = await fetch(input, init);
  let body: { method?: unknown; id?: unknown } | undefined;
  try {
    body = typeof init?.body === 'string' ? (JSON.parse(init.body) as typeof body) : undefined;
  } catch {
    body = undefined;
  }
  if (!body || typeof body.method !== 'string' || body.id === undefined || res.status === 202) return res;
  const method = body.method;
  const counted = method !== LISTEN;
  if (counted) wireStats.pending++;
  void checkReply(method, res.clone())
    .catch(() => undefined) // a reply cut off (its client aborted it) has nothing more to check
    .finally(() => counted && wireStats.pending--);
  return res;
};

export const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.ts', import.meta.url));

/** An `mcpServers` stdio entry that runs the legacy fixture. */
export function stdioFixture(env: Record<string, string> = {}): Record<string, unknown> {
  return { command: process.execPath, args: nodeArgs(FIXTURE), env };
}

export interface RunningGateway {
  readonly url: string;
  /** The HTTP server the gateway listens on (its open connections can be counted). */
  readonly server: ReturnType<typeof serve>;
  readonly gateway: Gateway;
  readonly config: GatewayConfig;
  /**
   * Makes the instance unreachable while it runs on (a cut-off or frozen one, as the others see it):
   * its server stops taking connections, and every connection it has ends, the channels other
   * instances opened to it included.
   */
  cutOff(): void;
  close(): Promise<void>;
}

export async function startGateway(
  file: Record<string, unknown>,
  opts: Partial<Omit<GatewayDeps, 'stateKeys'>> & { stateKeys?: StateKey[]; port?: number; env?: Record<string, string>; waitReady?: boolean } = {},
): Promise<RunningGateway> {
  const { stateKeys, port: listenPort, env, waitReady = true, ...deps } = opts;
  const parsed = parseConfig(file, env ?? {});
  if (!parsed.ok) throw new Error(parsed.error.join('\n'));
  const gateway = await createGateway(parsed.value, { stateKeys: stateKeys ?? [await randomStateKey()], ...deps });
  const server = serve({ fetch: gateway.fetch, hostname: '127.0.0.1', port: listenPort ?? 0 });
  const channels = new Set<Duplex>();
  if (gateway.connect) {
    server.on('connect', gateway.connect);
    server.on('connect', (_req: unknown, socket: Duplex) => {
      channels.add(socket);
      socket.once('close', () => channels.delete(socket));
    });
  }
  await new Promise<void>((r) => server.once('listening', () => r()));
  // Unless asked not to (a test of what clients see while backends still start): every backend's first connect.
  if (waitReady) await gateway.ready;
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${parsed.value.gateway.path}`,
    gateway,
    server,
    config: parsed.value,
    cutOff() {
      server.close();
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      for (const socket of channels) socket.destroy();
    },
    async close() {
      // Drain like main.ts: the gateway ends its streams first, then the sockets go.
      await gateway.close();
      const closing = new Promise<void>((r) => server.close(() => r()));
      await new Promise((r) => setTimeout(r, 100));
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await closing;
    },
  };
}

export type Capabilities = ConstructorParameters<typeof Client>[1] extends infer O ? (O extends { capabilities?: infer C } ? C : never) : never;

/** A v2 SDK client pinned to 2026-07-28 (it drives MRTR rounds itself). */
export async function connectClient(url: string, capabilities: Capabilities = {}, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: validatingFetch }));
  return client;
}

/** Text of the first content item of a tool result. */
export function firstText(result: { content?: unknown }): string {
  const c = (result.content as { type: string; text?: string }[] | undefined)?.[0];
  if (!c || c.type !== 'text') throw new Error(`no text content in ${JSON.stringify(result)}`);
  return c.text ?? '';
}
