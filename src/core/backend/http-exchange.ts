/**
 * One HTTP exchange with a backend on `node:http`/`node:https` (issue 30: the backend leg is ours,
 * not a web-streams pipeline per call). Connections come from a keep-alive agent the caller owns: a
 * parked call's response stream holds its connection only while the stream is open; a connection
 * whose exchange is over goes back to the agent for the next request. Redirects are followed only
 * within the request's origin (a server mounted at `/mcp/` redirecting `/mcp`, say), at most
 * MAX_REDIRECTS times, keeping the method and body for 307/308.
 */
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage, type ClientRequest } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

const MAX_REDIRECTS = 3;
/** Idle connections an agent keeps per backend origin (more are closed when their exchange ends). */
const MAX_FREE_SOCKETS = 16;
/**
 * How long an idle connection is kept when the server gave no `Keep-Alive: timeout=` hint: under the
 * 5 s after which Node's own server closes an idle connection (a server need not say when it will).
 */
export const IDLE_MS = 4_000;
/** An idle connection is closed this long before the time the server's hint gives (as Node ≥ 22 does). */
const HINT_MARGIN_MS = 1_000;

export interface ExchangeInit {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly headers: Record<string, string>;
  readonly body?: string | undefined;
  /** Aborts the exchange, its response stream included (node:http's own `signal` option). */
  readonly signal?: AbortSignal | undefined;
  /** How long a new connection may take to open (none: as long as the OS lets it); the answer itself is not timed. */
  readonly connectMs?: number | undefined;
  /**
   * Whether the request may go out once more after its reused connection was reset before any answer.
   * Usually the server closed that connection while it was idle and never read the request; but a
   * server (or a proxy) that read it and then reset the connection may have acted on it. Only a
   * request that does no harm twice may be sent again. Default: GET and DELETE yes, POST no.
   */
  readonly resendable?: boolean | undefined;
}

/**
 * The error of a request whose reused connection was reset after it was written and before any answer,
 * and which is not sent again (`resendable` false): the server may or may not have received it.
 */
export class ResetBeforeAnswer extends Error {
  readonly code = 'ECONNRESET';
  constructor(cause: Error) {
    super('the server closed the connection before answering; the request may have reached it, so it was not sent again', { cause });
    this.name = 'ResetBeforeAnswer';
  }
}

/** The error of a connection that did not open within `connectMs` (the request never reached the server). */
export class ConnectTimeout extends Error {
  readonly code = 'ERR_CONNECT_TIMEOUT';
}

/** The agents of one backend leg: keep-alive, no limit on open connections (each open stream needs one). */
export interface LegAgents {
  readonly http: HttpAgent;
  readonly https: HttpsAgent;
  /** Closes every connection, idle or not. */
  destroy(): void;
}

/**
 * Node's agent keeps the options a socket was made with for as long as the socket lives (the
 * socket's listeners hold them), the headers and the URL's parts of the request that made it among
 * them; a parked call's response stream holds its socket (issue 30). Once the connection is made
 * those are of no more use (the agent reads the host, port, local address and address family, the
 * TLS agent its TLS options and session key): dropped.
 */
const REQUEST_ONLY = ['headers', 'href', 'protocol', 'hostname', 'pathname', 'search', 'hash', 'path', 'method'] as const;

function dropRequestOptions(options: Record<string, unknown>): void {
  for (const key of REQUEST_ONLY) delete options[key];
}

/**
 * The idle time a connection may be kept, from its last response's `Keep-Alive: timeout=` hint
 * (`hintedIdle`). Node 20's agent reads that hint only when the agent has a timeout of its own, which
 * would also time the open streams.
 */
const hintedLimits = new WeakMap<Duplex, number>();
/** A longer hint is honoured only this far. */
const MAX_HINTED_MS = 60_000;

/** How long a connection whose response carried `keepAlive` may stay idle (0: not at all); undefined: no hint. */
export function hintedIdle(keepAlive: string | string[] | undefined): number | undefined {
  const seconds = typeof keepAlive === 'string' ? /(?:^|[\s,])timeout=(\d+)/i.exec(keepAlive)?.[1] : undefined;
  return seconds === undefined ? undefined : Math.max(0, Math.min(MAX_HINTED_MS, Number(seconds) * 1000 - HINT_MARGIN_MS));
}

/** A mixin's base: its constructor takes what the agent's does. */
type AgentClass = new (...args: any[]) => HttpAgent;

/** An agent (http or https) that keeps no request's options with its sockets and keeps idle ones only as long as their servers do. */
function lean<Base extends AgentClass>(base: Base, idleMs: number): Base {
  return class extends base {
    override createConnection(...args: Parameters<HttpAgent['createConnection']>): ReturnType<HttpAgent['createConnection']> {
      const socket = super.createConnection(...args);
      dropRequestOptions(args[0] as Record<string, unknown>);
      return socket;
    }

    /** Keeps an idle connection only as long as its server keeps it: a reused one the server closed meanwhile fails. */
    override keepSocketAlive(socket: Duplex): boolean {
      if (!(super.keepSocketAlive(socket) as unknown as boolean)) return false;
      const ms = hintedLimits.get(socket) ?? idleMs;
      if (ms <= 0) return false;
      (socket as Socket).setTimeout(ms);
      return true;
    }

    override reuseSocket(socket: Duplex, request: ClientRequest): void {
      (socket as Socket).setTimeout(0); // an exchange, a long stream among them, is not timed
      super.reuseSocket(socket, request);
    }
  };
}

/** `idleMs`: how long an idle connection is kept when its server gave no hint (tests shorten it). */
export function createLegAgents(idleMs = IDLE_MS): LegAgents {
  const options = { keepAlive: true, maxFreeSockets: MAX_FREE_SOCKETS, scheduling: 'lifo' as const };
  const http = new (lean(HttpAgent, idleMs))(options);
  const https = new (lean(HttpsAgent, idleMs))(options) as HttpsAgent;
  return {
    http,
    https,
    destroy: () => {
      http.destroy();
      https.destroy();
    },
  };
}

/** The exchanges a leg has open, so closing the leg ends them all. */
export type OpenExchanges = Set<ClientRequest>;

/** The code of the error an exchange ends with when its leg closes it (`closeExchanges`): never sent again. */
export const CLOSED_BY_US = 'ERR_LEG_CLOSED';

/**
 * Ends every open exchange of a leg that closes. Each fails with CLOSED_BY_US, not the reset a bare
 * `destroy()` gives: a reset on a reused connection is taken for one the peer closed while idle and
 * sent again, and a request that had reached its peer would then arrive twice.
 */
export function closeExchanges(open: OpenExchanges): void {
  for (const req of open) req.destroy(Object.assign(new Error('the connection was closed by this side'), { code: CLOSED_BY_US }));
}

/**
 * Sends one request and resolves with the response head (the body is the caller's to read or
 * `resume()`). Rejects on a connection error; the exchange is removed from `open` once it ends.
 */
export function exchange(url: URL, init: ExchangeInit, agents: LegAgents, open: OpenExchanges, redirects = 0): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => send({ url, init, agents, open, redirects, resolve, reject }));
}

/** One exchange until its response head: what a retry or a redirect needs. */
interface Job {
  readonly url: URL;
  readonly init: ExchangeInit;
  readonly agents: LegAgents;
  readonly open: OpenExchanges;
  readonly redirects: number;
  resolve(res: IncomingMessage): void;
  reject(e: unknown): void;
}

/**
 * Sends `job`'s request. Its listeners hold the job (the request's body and headers) only until the
 * response head: a parked call's response stream lives long (issue 30).
 */
function send(job: Job): void {
  const { url, init, agents, open } = job;
  const secure = url.protocol === 'https:';
  // Headers as a flat list: node writes them out at once, with no per-request header map kept
  // beside the open stream (issue 30); `Host` is then ours to send.
  const headers: string[] = ['host', url.host];
  for (const [name, value] of Object.entries(init.headers)) headers.push(name, value);
  // The body goes as bytes: node then writes its request head on its own, and flattens it in place;
  // with a string body it writes a copy joined to the body, and the request keeps the head as the tree
  // of pieces it was built from, about 0.6 KiB that a parked call's open response holds (issue 30).
  const body = init.body === undefined ? undefined : Buffer.from(init.body);
  if (body !== undefined) headers.push('content-length', String(body.length));
  const agent = secure ? agents.https : agents.http;
  const req = (secure ? httpsRequest : httpRequest)(
    url,
    init.signal ? { method: init.method, headers, agent, signal: init.signal } : { method: init.method, headers, agent },
  );
  open.add(req);
  // `on`, not `once`, for events that come once anyway: each `once` wrapper (a state object and a bound
  // function) would stay with the request for as long as its response is open (issue 30).
  req.on('close', () => open.delete(req));
  if (init.connectMs !== undefined) limitConnect(req, init.connectMs);
  // A connection the backend closed while it was idle in the pool fails at once, before any answer:
  // the request most likely never reached the backend, and one that may go out twice is sent again
  // (on the next idle connection, or a new one: this ends because each retry uses up an idle
  // connection). Errors after the response head (a reset mid-stream) reach the response's readers;
  // this listener keeps a late one from being unhandled.
  let pending: Job | undefined = job;
  req.on('error', (e: NodeJS.ErrnoException) => {
    const waiting = pending;
    if (!waiting) return;
    pending = undefined;
    if (!req.reusedSocket || (e.code !== 'ECONNRESET' && e.code !== 'EPIPE')) waiting.reject(e);
    else if (waiting.init.resendable ?? waiting.init.method !== 'POST') send(waiting);
    else waiting.reject(new ResetBeforeAnswer(e));
  });
  req.once('response', (res) => {
    const answered = pending!;
    pending = undefined;
    res.on('error', ignore);
    const hinted = hintedIdle(res.headers['keep-alive']);
    if (hinted !== undefined) hintedLimits.set(res.socket, hinted);
    const target = redirectWithinOrigin(answered.url, res, answered.init.method, answered.redirects);
    if (!target) {
      answered.resolve(res);
      return;
    }
    res.resume();
    send({ ...answered, url: target, redirects: answered.redirects + 1 });
  });
  req.end(body);
}

/** Errors after the response head reach the response's readers; this keeps a late one from being unhandled. */
function ignore(): void {}

/** Where a redirect that may be followed leads; undefined for any other response. */
function redirectWithinOrigin(from: URL, res: IncomingMessage, method: ExchangeInit['method'], redirects: number): URL | undefined {
  const status = res.statusCode ?? 0;
  const keepsMethod = status === 307 || status === 308;
  if (!keepsMethod && !((status === 301 || status === 302) && method === 'GET')) return undefined;
  const location = res.headers.location;
  if (!location || redirects >= MAX_REDIRECTS) return undefined;
  let target: URL;
  try {
    target = new URL(location, from);
  } catch {
    return undefined;
  }
  return target.origin === from.origin ? target : undefined;
}

/**
 * Lets go of the head of a response that stays open (a parked call's event stream, issue 30) as node
 * received it: `rawHeaders`, a list of every name and value, about 0.4 KiB, read by nothing once the
 * head is parsed. `headers` (made from it here, if it was not yet) stays: the agent reads its
 * keep-alive hint when the connection is freed.
 */
export function dropRawHead(res: IncomingMessage): void {
  if (res.headers) res.rawHeaders = [];
}

/** Reads a whole response body as text; rejects when it is longer than `limit` bytes. */
export function readText(res: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
      else res.destroy(new Error(`the backend's response is longer than ${limit} bytes`));
    });
    res.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.once('error', reject);
    res.once('aborted', () => reject(new Error('the backend closed the connection mid-response')));
  });
}

/** Destroys `req` with a ConnectTimeout when its new connection has not opened within `ms` (a pooled one is open already). */
function limitConnect(req: ClientRequest, ms: number): void {
  req.once('socket', (socket) => {
    if (!socket.connecting) return;
    const timer = setTimeout(() => req.destroy(new ConnectTimeout(`no connection to ${req.host} within ${ms} ms`)), ms);
    timer.unref();
    socket.once('connect', () => clearTimeout(timer));
    req.once('close', () => clearTimeout(timer));
  });
}
