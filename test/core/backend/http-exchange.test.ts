/**
 * One HTTP exchange with a backend, against a raw HTTP/1.1 server on 127.0.0.1 (real sockets) that
 * scripts what each request gets: an answer, or a reset after it was read (a server or proxy that
 * received the request and dropped the connection), with or without a `Keep-Alive` hint.
 */
import type { IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createLegAgents,
  exchange,
  hintedIdle,
  readText,
  ResetBeforeAnswer,
  type ExchangeInit,
  type LegAgents,
} from '../../../src/core/backend/http-exchange.js';
import { until } from '../../helpers/until.js';

/** What the server does with the n-th request it reads (1-based, over all connections). */
type Script = (n: number, socket: Socket) => 'answer' | 'reset';

interface RawServer {
  readonly url: URL;
  /** Requests read whole, and connections accepted. */
  readonly seen: { requests: number; connections: number; closedByClient: number };
}

const servers: Server[] = [];
const agentsMade: LegAgents[] = [];

async function rawServer(script: Script, keepAlive?: string): Promise<RawServer> {
  const seen = { requests: 0, connections: 0, closedByClient: 0 };
  const server = createServer((socket) => {
    seen.connections += 1;
    socket.on('end', () => (seen.closedByClient += 1));
    socket.on('error', () => undefined);
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, headEnd))?.[1] ?? 0);
        if (buffered.length < headEnd + 4 + length) return;
        buffered = buffered.slice(headEnd + 4 + length);
        seen.requests += 1;
        if (script(seen.requests, socket) === 'reset') {
          socket.resetAndDestroy();
          return;
        }
        const hint = keepAlive === undefined ? '' : `Keep-Alive: ${keepAlive}\r\n`;
        socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n${hint}\r\nok`);
      }
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), seen };
}

function agents(idleMs?: number): LegAgents {
  const made = createLegAgents(idleMs);
  agentsMade.push(made);
  return made;
}

const post = (extra: Partial<ExchangeInit> = {}): ExchangeInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: '{"jsonrpc":"2.0"}',
  ...extra,
});

/** One exchange read to its end; its connection then goes back to the agent's idle ones. */
async function answered(url: URL, init: ExchangeInit, via: LegAgents): Promise<string> {
  const res: IncomingMessage = await exchange(url, init, via, new Set());
  const text = await readText(res, 1024);
  await until('the connection to be idle in the agent', () => Object.keys(via.http.freeSockets).length > 0);
  return text;
}

afterEach(async () => {
  for (const a of agentsMade.splice(0)) a.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe('an HTTP exchange with a backend', () => {
  it('does not send a POST again after its reused connection was reset once the server had read it, and says why', async () => {
    const server = await rawServer((n) => (n === 2 ? 'reset' : 'answer'));
    const via = agents();
    expect(await answered(server.url, post(), via)).toBe('ok');
    const error = await exchange(server.url, post(), via, new Set()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResetBeforeAnswer);
    expect((error as Error).message).toMatch(/may have reached it, so it was not sent again/);
    expect(server.seen).toMatchObject({ requests: 2, connections: 1 });
  });

  it('sends a request that does no harm twice (a resendable POST, a GET) again on another connection', async () => {
    const server = await rawServer((n) => (n === 2 || n === 4 ? 'reset' : 'answer'));
    const via = agents();
    expect(await answered(server.url, post(), via)).toBe('ok');
    expect(await answered(server.url, post({ resendable: true }), via)).toBe('ok');
    expect(server.seen).toMatchObject({ requests: 3, connections: 2 });
    expect(await answered(server.url, { method: 'GET', headers: {} }, via)).toBe('ok');
    expect(server.seen).toMatchObject({ requests: 5, connections: 3 });
  });

  it("closes an idle connection before the server's Keep-Alive timeout (Node 20's agent keeps it forever)", async () => {
    const server = await rawServer(() => 'answer', 'timeout=2, max=100');
    // An agent that would keep it a minute without the hint: the hint alone closes it.
    await answered(server.url, post(), agents(60_000));
    // The server would never close it; the agent does, a second before the hinted 2 s.
    await until('the gateway to close the idle connection', () => server.seen.closedByClient === 1, 10_000);
  });

  it('closes an idle connection after its own idle time when the server gives no hint (uvicorn closes at 5 s with none)', async () => {
    const server = await rawServer(() => 'answer');
    await answered(server.url, post(), agents(150));
    await until('the gateway to close the idle connection', () => server.seen.closedByClient === 1, 10_000);
  });

  it('reads the Keep-Alive hint as the time less a second, at most 60 s', () => {
    expect(hintedIdle('timeout=5, max=1000')).toBe(4_000);
    expect(hintedIdle('max=10, timeout=30')).toBe(29_000);
    expect(hintedIdle('timeout=1')).toBe(0);
    expect(hintedIdle('timeout=3600')).toBe(60_000);
    expect(hintedIdle('max=10')).toBeUndefined();
    expect(hintedIdle(undefined)).toBeUndefined();
  });
});
