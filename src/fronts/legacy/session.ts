/**
 * One legacy client session, whichever way it came in: a 2025-era streamable HTTP session
 * (`Mcp-Session-Id`, with its event store for resumption) or a 2024-11-05 HTTP+SSE session (`/sse` and
 * `/messages`). Either way it is an SDK v2 `Server` (./session-server.ts) over the session's transport,
 * seen through the count of its requests in flight (./session-requests.ts), plus what its handlers keep:
 * the client's log level and its resource subscriptions.
 *
 * A session opens and ends through the registry (./session-registry.ts), which decides when it ends;
 * the session says when its connection closed (a DELETE, the `/sse` stream gone) and closes itself
 * when asked.
 */
import type { Server } from '@modelcontextprotocol/server';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import type { LogLevel } from '../../protocol/rev-2026-07-28/envelope.js';
import { untilEnd } from '../../util/stream-end.js';
import type { SessionEventStore } from './event-store.js';
import { CountedTransport, type SessionRequests } from './session-requests.js';
import type { HttpSseServerTransport } from './sse-transport.js';

/** How the session's client reaches it. */
export type SessionWire =
  | {
      readonly kind: 'streamable-http';
      readonly transport: WebStandardStreamableHTTPServerTransport;
      /** What the transport sent, for resumption with Last-Event-ID. */
      readonly events: SessionEventStore;
    }
  | { readonly kind: 'sse'; readonly transport: HttpSseServerTransport };

/**
 * The resource subscriptions of one session: uri → how to end it. Once ended (the session is gone), a
 * subscription that arrives late — its backend acknowledged it after the session closed — is ended at
 * once instead of kept.
 */
export class SessionSubscriptions {
  readonly #ends = new Map<string, () => Promise<void>>();
  #ended = false;

  has(uri: string): boolean {
    return this.#ends.has(uri);
  }

  get size(): number {
    return this.#ends.size;
  }

  /** Keeps `end` for `uri`; ends it at once if the session has one for `uri` already, or has ended. */
  async add(uri: string, end: () => Promise<void>): Promise<void> {
    if (this.#ended || this.#ends.has(uri)) return end();
    this.#ends.set(uri, end);
  }

  /** Ends the subscription to `uri`, if there is one. */
  async remove(uri: string): Promise<void> {
    const end = this.#ends.get(uri);
    this.#ends.delete(uri);
    await end?.();
  }

  /** Ends every subscription, and any added later. */
  async endAll(): Promise<void> {
    this.#ended = true;
    const ends = [...this.#ends.values()];
    this.#ends.clear();
    await Promise.all(ends.map((end) => end()));
  }
}

export interface SessionInit {
  readonly id: string;
  readonly principal: string;
  readonly wire: SessionWire;
  readonly requests: SessionRequests;
  /** Epoch ms: when it opened. */
  readonly now: number;
  /** Builds the session's SDK server, whose handlers read and update this session. */
  readonly server: (session: Session) => Server;
}

/** One legacy session: its wire, its server, what its handlers keep; `close()` is idempotent. */
export class Session {
  readonly id: string;
  readonly principal: string;
  readonly wire: SessionWire;
  readonly server: Server;
  /** Client requests in flight. */
  readonly requests: SessionRequests;
  readonly subscriptions = new SessionSubscriptions();
  /** Epoch ms of the last request. */
  lastUsed: number;
  /** The level the client asked for with `logging/setLevel`. */
  logLevel: LogLevel | undefined;
  /** The scopes the token of its latest request granted (OAuth; `gateway.policy` rules by scope read them). */
  tokenScopes: ReadonlySet<string> | undefined;
  /** Open GET streams (streamable HTTP). */
  #streams = 0;
  #connectionClosed = false;
  #onClosed: (() => void) | undefined;
  #closing: Promise<void> | undefined;

  constructor(init: SessionInit) {
    this.id = init.id;
    this.principal = init.principal;
    this.wire = init.wire;
    this.requests = init.requests;
    this.lastUsed = init.now;
    this.server = init.server(this);
  }

  /** Its state scope (the proxy tools' `session:<id>`, inside its principal), which keeps its calls' log lines. */
  get scope(): string {
    return `session:${this.id}`;
  }

  touch(now: number): void {
    this.lastUsed = now;
  }

  /** Nothing in flight and no open stream: it may be closed to make room for its principal (session-bounds.ts). */
  idle(): boolean {
    // A 2024-11-05 session's stream is open for as long as it lives.
    return this.wire.kind === 'streamable-http' && this.requests.size === 0 && this.#streams === 0;
  }

  /** Connects its server to its transport; from then on, `onClosed` hears when that connection closes. */
  async connect(): Promise<void> {
    this.server.onclose = () => {
      this.#connectionClosed = true;
      this.#onClosed?.();
    };
    await this.server.connect(new CountedTransport(this.wire.transport, this.requests));
  }

  /** Calls `listener` once its connection has closed (at once if it has), whoever closed it. */
  onClosed(listener: () => void): void {
    this.#onClosed = listener;
    if (this.#connectionClosed) listener();
  }

  /** A GET stream of this session (`res`), counted while it is open: a session with an open stream is not idle. */
  countStream(res: Response): Response {
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return res;
    this.#streams++;
    const body = untilEnd(res.body, () => void (this.#streams = Math.max(0, this.#streams - 1)));
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }

  /** Closes its transport and its server (what its requests wait for aborts). Idempotent; never rejects. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.wire.transport.close().catch(() => undefined);
      await this.server.close().catch(() => undefined);
    })();
    return this.#closing;
  }
}
