/**
 * A backend that speaks MCP 2026-07-28 (config `"protocol": "2026-07-28"`), behind the port. It needs
 * no session: each call is forwarded as one stateless request (v2 SDK client pinned to 2026-07-28)
 * with the caller's per-request capabilities, log level and trace (`traceparent`). Its result type is
 * kept: `input_required` (with the backend's requestState) and `task` come back as such, for the front
 * to carry on.
 * Connect and list deadlines are tied to `close()`.
 *
 * `ioPerRequest` (the edge handler in workerd, where an I/O object such as a fetch's AbortSignal belongs
 * to the request that made it): the server is discovered once, and each forward then talks through a
 * client and transport of its own, connected from that discovery without a round trip and closed when
 * it ends; nothing made in one request is used by another (close() marks the port closed; the calls
 * in flight end with their own requests).
 */
import { CLIENT_CAPABILITIES_META_KEY, Client, LOG_LEVEL_META_KEY, SdkError, SdkErrorCode, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { PRINCIPAL_HEADER, type GatewaySettings, type HttpServerConfig } from '../../config.js';
import { GatewayError, isJsonRpcError } from '../../errors.js';
import { exchangeFailure, httpStatusOf } from './exchange-failure.js';
import type { Logger } from '../../log.js';
import { anySignal, raceSignal } from '../../util/abort.js';
import { background } from '../../util/background.js';
import { capabilityKey, type InputCapabilities } from '../input-capabilities.js';
import type { ListChange } from '../events.js';
import { ListCache } from './list-cache.js';
import { followListStream } from './list-follow.js';
import { outcomeOf, withTasksExtension, withoutTasksExtension } from './modern-wire.js';
import { paramHeadersFor } from './param-headers.js';
import { withCredentials, type BackendCredentials } from './backend-credentials.js';
import { withoutResponseBody } from './start-failure.js';
import { withTraceparent } from './traced-fetch.js';
import { TASKS_EXTENSION, declaresTasksExtension, sendTaskLeg } from './task-leg.js';
import {
  type BackendCall,
  type BackendHealth,
  type BackendOutcome,
  type BackendPort,
  type CatalogKind,
  type ProgressUpdate,
  type UpstreamFollow,
  CONNECT_TIMEOUT_MS,
  LIST_METHODS,
  fetchAllPages,
  toProgressUpdate,
} from './port.js';

interface Forward {
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly capabilities: Record<string, unknown>;
  readonly logLevel?: string | undefined;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly onprogress?: ((p: ProgressUpdate) => void) | undefined;
  /** Headers of this request alone (SEP-2243 `Mcp-Param-*`). */
  readonly headers?: Record<string, string> | undefined;
}

export class ModernBackend implements BackendPort {
  readonly name: string;
  readonly server: HttpServerConfig;
  readonly #log: Logger;
  readonly #clientInfo: { name: string; version: string };
  readonly #lists: ListCache;
  readonly #closer = new AbortController();
  readonly #capsByView = new Map<string, InputCapabilities>();
  #client: Client | undefined;
  #connecting: Promise<Client> | undefined;
  #closed = false;
  #failures = 0;
  /** A 401/403 was logged (`#refused`); cleared by a request that goes through. */
  #refusalSaid = false;
  #lastError: string | undefined;
  /** The discovery a per-request client is connected from (`ioPerRequest`). */
  #discovered: unknown;
  readonly #ioPerRequest: boolean;
  /** When the client connected (ISO 8601). */
  #connectedAt: string | undefined;
  /** Every request to the backend: the trace, and the gateway's own token when the entry has `auth`. */
  readonly #fetch: (input: string | URL, init?: RequestInit) => Promise<Response>;
  readonly #credentials: BackendCredentials | undefined;
  /** Deadline of a list (its connect included) and of any other request that asks no input (`gateway.listTimeoutMs`). */
  readonly #listTimeoutMs: number;

  constructor(opts: {
    server: HttpServerConfig;
    settings: Readonly<GatewaySettings>;
    clientInfo: { name: string; version: string };
    logger: Logger;
    /** Bearer tokens for this backend (its `auth` entry); closed with the backend. */
    credentials?: BackendCredentials | undefined;
    /** A client per forward, nothing shared between requests (the edge handler's runtime). */
    ioPerRequest?: boolean | undefined;
  }) {
    this.server = opts.server;
    this.#ioPerRequest = opts.ioPerRequest === true;
    this.#credentials = opts.credentials;
    this.#listTimeoutMs = opts.settings.listTimeoutMs;
    this.#fetch = withCredentials(withTraceparent(), opts.credentials);
    this.name = opts.server.name;
    this.#log = opts.logger.child({ backend: this.name });
    this.#clientInfo = opts.clientInfo;
    this.#lists = new ListCache(opts.settings.cacheTtlMs, (kind, view) => this.#fetchList(kind, view), !this.#ioPerRequest);
  }

  get up(): boolean {
    return this.#client !== undefined;
  }

  /**
   * Asks the server's discovery again, so `health()` says whether it answers now: a stateless server
   * holds no connection whose loss would tell, and at the edge nothing runs between requests. A failure
   * leaves it down until a request reaches it again. Never rejects.
   */
  async checkReach(timeoutMs: number): Promise<void> {
    if (this.#closed) return;
    const shared = this.#ioPerRequest ? undefined : this.#client;
    if (!shared) {
      // A connect goes on past the check (its own deadline); the check only waits `timeoutMs` for it.
      const connecting = (this.#ioPerRequest ? this.#connectOnce() : this.#connect()).catch(() => {
        if (this.#ioPerRequest) this.#client = undefined;
      });
      await raceSignal(connecting, AbortSignal.timeout(timeoutMs)).catch(() => undefined);
      return;
    }
    try {
      await shared.discover({ signal: this.#bounded(AbortSignal.timeout(timeoutMs)), timeout: timeoutMs } as never);
    } catch (e) {
      if (this.#closed) return;
      const slow = (e as Error | null)?.name === 'TimeoutError' || (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout);
      this.#unreachable(slow ? new Error(`no answer to its discovery within ${timeoutMs} ms`) : e);
      this.#drop(shared);
    }
  }

  /**
   * A 401 or 403 from the server is a configuration to fix (its credentials, or `forwardPrincipal` to a
   * core whose key does not delegate), not an outage: said at warn, which discovery and /readyz do not
   * show (they pass). Once until a request goes through again.
   */
  #refused(e: unknown): void {
    const status = httpStatusOf(e);
    if ((status !== 401 && status !== 403) || this.#refusalSaid) return;
    this.#refusalSaid = true;
    this.#log.warn({ status }, 'the backend refused the gateway (check its credentials, or forwardPrincipal against a key that delegates)');
  }

  /** Counts a failure to reach the server, keeps why (never its HTTP body) and says it once an outage: at warn the first time, then at debug. */
  #unreachable(e: unknown): void {
    this.#failures++;
    this.#lastError = withoutResponseBody(e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e));
    const line = { err: this.#lastError, failures: this.#failures };
    if (this.#failures === 1) this.#log.warn(line, 'backend unavailable (2026-07-28): cannot connect');
    else this.#log.debug(line, 'backend still unavailable');
  }

  health(): BackendHealth {
    const state = this.up ? 'up' : this.#failures === 0 ? 'connecting' : 'down';
    if (state === 'up' && this.#connectedAt) return { name: this.name, state, failures: this.#failures, connectedAt: this.#connectedAt };
    return state !== 'up' && this.#lastError !== undefined
      ? { name: this.name, state, failures: this.#failures, lastError: this.#lastError }
      : { name: this.name, state, failures: this.#failures };
  }

  async start(): Promise<void> {
    try {
      await this.#connect();
    } catch (e) {
      // The connect said why, at warn; this says only that the start goes on without it.
      this.#log.debug({ err: (e as Error).message }, 'backend unavailable at start; will retry on use');
    }
  }

  async capabilities(): Promise<Record<string, unknown> | undefined> {
    try {
      // A connect under way (a frozen server) is waited for within listTimeoutMs, as a list is; a
      // connected client costs no timer (this runs on every list and discovery).
      const client = this.#client ?? (await raceSignal(this.#connect(), AbortSignal.timeout(this.#listTimeoutMs)));
      if (this.#ioPerRequest) return (this.#discovered as { capabilities?: Record<string, unknown> } | undefined)?.capabilities;
      return client.getServerCapabilities() as Record<string, unknown> | undefined;
    } catch {
      return undefined;
    }
  }

  list(kind: CatalogKind, { fresh = false, caps = {} }: { fresh?: boolean; caps?: InputCapabilities } = {}): Promise<Record<string, unknown>[]> {
    const view = capabilityKey(caps);
    this.#capsByView.set(view, caps);
    return this.#lists.get(kind, fresh, view);
  }

  cachedList(kind: CatalogKind, caps: InputCapabilities = {}): Record<string, unknown>[] | undefined {
    return this.#lists.cached(kind, capabilityKey(caps));
  }

  async request(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    return this.#forward({ method, params: params ?? {}, capabilities: {}, timeoutMs: this.#listTimeoutMs, signal });
  }

  /** Forwards one call; the result type decides the outcome (`input_required` keeps the backend's state). */
  async call(call: BackendCall): Promise<BackendOutcome> {
    const { channel } = call;
    const params: Record<string, unknown> = { ...call.params };
    if (call.inputResponses !== undefined) params['inputResponses'] = call.inputResponses;
    if (call.requestState !== undefined) params['requestState'] = call.requestState;
    // A caller that declared the tasks extension may get the backend's own task: that answer only
    // the task leg can read (task-leg.ts).
    // SEP-2243: the tool's `x-mcp-header` arguments mirrored as headers, as a client sends them; and
    // the caller, for a session core that keeps each caller of this gateway apart (`forwardPrincipal`).
    const paramHeaders = call.method === 'tools/call' ? this.#paramHeaders(params) : undefined;
    const principal = this.#principalHeader(call.principal);
    const headers = paramHeaders || principal ? { ...paramHeaders, ...principal } : undefined;
    if (call.method === 'tools/call' && declaresTasksExtension(call.capabilities)) {
      const result = await this.#taskLegWithin(
        { method: call.method, params, capabilities: call.capabilities, headers },
        { signal: call.signal, timeoutMs: call.timeoutMs, named: 'callTimeoutMs' },
        (p) => channel.progress(toProgressUpdate(p as { progress: number; total?: number; message?: string })),
      );
      return outcomeOf(result);
    }
    const result = await this.#forward({
      method: call.method,
      params,
      capabilities: withoutTasksExtension(call.capabilities),
      logLevel: call.logLevel,
      timeoutMs: call.timeoutMs,
      signal: call.signal,
      onprogress: (p) => channel.progress(p),
      headers,
    });
    return outcomeOf(result);
  }

  /** `Mcp-Gateway-Principal` naming `principal`, when this server is a session core that asked for it. */
  #principalHeader(principal: string): Record<string, string> | undefined {
    return this.server.forwardPrincipal ? { [PRINCIPAL_HEADER]: encodeURIComponent(principal) } : undefined;
  }

  /** The `Mcp-Param-*` headers of a tools/call, from the tool's listed schema (none when it is not listed yet). */
  #paramHeaders(params: Record<string, unknown>): Record<string, string> | undefined {
    const name = params['name'];
    const tool = typeof name === 'string' ? this.#lists.findCached('tools', name) : undefined;
    const headers = paramHeadersFor(tool?.['inputSchema'], params['arguments']);
    return Object.keys(headers).length > 0 ? headers : undefined;
  }

  followListChanges(kinds: ReadonlySet<ListChange>, onChange: (kind: ListChange) => void, signal: AbortSignal, follow: UpstreamFollow = {}): Promise<void> {
    const headers = follow.principal !== undefined ? this.#principalHeader(follow.principal) : undefined;
    return followListStream({
      kinds,
      signal,
      follow,
      log: this.#log,
      open: (params, onnotification) => this.#taskLeg('subscriptions/listen', params, {}, signal, undefined, headers, onnotification),
      onChange: (kind) => {
        this.#lists.invalidate(kind);
        onChange(kind);
      },
    });
  }

  /** `tasks/get`, `tasks/update` or `tasks/cancel` for one of this backend's own tasks. */
  async taskRequest(method: string, params: Record<string, unknown>, signal: AbortSignal, principal?: string): Promise<Record<string, unknown>> {
    const headers = principal !== undefined ? this.#principalHeader(principal) : undefined;
    return this.#taskLegWithin(
      { method, params, capabilities: { extensions: { [TASKS_EXTENSION]: {} } }, headers },
      { signal, timeoutMs: this.#listTimeoutMs, named: 'listTimeoutMs' },
    );
  }

  /**
   * The task leg within `timeoutMs` and `signal`: running out is `backend_timeout`, naming the deadline
   * (`named`), not the deadline's own DOMException (whose code 23 is no JSON-RPC code).
   */
  async #taskLegWithin(
    req: { method: string; params: Record<string, unknown>; capabilities: Record<string, unknown>; headers: Record<string, string> | undefined },
    within: { signal: AbortSignal; timeoutMs: number; named: string },
    onprogress?: (progress: unknown) => void,
  ): Promise<Record<string, unknown>> {
    const limit = AbortSignal.timeout(within.timeoutMs);
    try {
      return await this.#taskLeg(req.method, req.params, req.capabilities, anySignal([within.signal, limit]), onprogress, req.headers);
    } catch (e) {
      if (limit.aborted && !within.signal.aborted && !this.#closed)
        throw new GatewayError('backend_timeout', `${this.name} (${req.method} unanswered within ${within.named}, ${within.timeoutMs} ms)`);
      throw e;
    }
  }

  async #taskLeg(
    method: string,
    params: Record<string, unknown>,
    capabilities: Record<string, unknown>,
    signal: AbortSignal,
    onprogress?: (p: Record<string, unknown>) => void,
    headers?: Record<string, string>,
    onnotification?: (message: Record<string, unknown>) => void,
  ): Promise<Record<string, unknown>> {
    if (this.#closed) throw new GatewayError('gateway_closing');
    return sendTaskLeg({
      onnotification,
      url: this.server.url,
      headers: headers ? { ...this.server.headers, ...headers } : this.server.headers,
      method,
      params,
      capabilities,
      clientInfo: this.#clientInfo,
      signal: this.#bounded(signal),
      onprogress,
      fetch: this.#fetch,
    });
  }

  /** `signal`, also ended by close(); per request, `signal` alone (the closer belongs to another request). */
  #bounded(signal: AbortSignal): AbortSignal {
    return this.#ioPerRequest ? signal : anySignal([signal, this.#closer.signal]);
  }

  /** The shared client; per request (`ioPerRequest`), a client of this forward's own from the discovery. */
  async #clientFor(): Promise<{ client: Client; own: boolean }> {
    const shared = await this.#connect();
    if (!this.#ioPerRequest) return { client: shared, own: false };
    const client = new Client({ ...this.#clientInfo }, { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(this.#transport(), { prior: { kind: 'modern', discover: this.#discovered } } as never);
    return { client, own: true };
  }

  #transport(): StreamableHTTPClientTransport {
    return new StreamableHTTPClientTransport(new URL(this.server.url), { requestInit: { headers: this.server.headers }, fetch: this.#fetch });
  }

  /**
   * `#clientFor()`, waited for within the request's own `timeoutMs` and signal: a connect under way (a
   * frozen server, after /readyz or a failure dropped the client) has its own deadline, CONNECT_TIMEOUT_MS,
   * and goes on for the next request; this one waits no longer than its own (callTimeoutMs for a call,
   * listTimeoutMs for a list). A connected client costs no timer.
   */
  #clientWithin(req: Forward): Promise<{ client: Client; own: boolean }> {
    const pending = this.#clientFor().catch((e: unknown) => {
      if (e instanceof GatewayError) throw e;
      // A per-request client that could not connect from the discovery: discover again next time.
      this.#client = undefined;
      throw new GatewayError('backend_unavailable', this.name, { cause: e });
    });
    return this.#client !== undefined ? pending : this.#connectWithin(pending, req);
  }

  /** A connect under way, waited for within `req`'s deadline and signal (then `backend_timeout`, or the signal's reason). */
  async #connectWithin(pending: Promise<{ client: Client; own: boolean }>, req: Forward): Promise<{ client: Client; own: boolean }> {
    const limit = AbortSignal.timeout(Math.max(1, req.timeoutMs));
    try {
      return await raceSignal(pending, anySignal([req.signal, limit]));
    } catch (e) {
      // Given up on: a client of its own that connects later is closed then.
      pending.then(
        ({ client, own }) => own && this.#closeClient(client),
        () => undefined,
      );
      if (limit.aborted && !req.signal.aborted) throw new GatewayError('backend_timeout', `${this.name} (not connected within ${req.timeoutMs} ms)`);
      throw e;
    }
  }

  async #forward(req: Forward): Promise<Record<string, unknown>> {
    const { client, own } = await this.#clientWithin(req);
    const meta: Record<string, unknown> = {
      ...((req.params['_meta'] as Record<string, unknown> | undefined) ?? {}),
      [CLIENT_CAPABILITIES_META_KEY]: req.capabilities,
    };
    if (req.logLevel !== undefined) meta[LOG_LEVEL_META_KEY] = req.logLevel;
    const onprogress = req.onprogress;
    try {
      const result = await client.request(
        { method: req.method, params: { ...req.params, _meta: meta } } as never,
        {
          allowInputRequired: true,
          signal: this.#bounded(req.signal),
          timeout: req.timeoutMs,
          ...(req.headers ? { headers: req.headers } : {}),
          ...(onprogress
            ? { onprogress: (p: { progress: number; total?: number | undefined; message?: string | undefined }) => onprogress(toProgressUpdate(p)) }
            : {}),
        } as never,
      );
      this.#refusalSaid = false;
      return result as Record<string, unknown>;
    } catch (e) {
      if (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout) throw new GatewayError('backend_timeout', this.name, { cause: e });
      if (isJsonRpcError(e) || req.signal.aborted) throw e;
      // Per request, a failed forward makes the next one discover the server again.
      if (own) this.#client = undefined;
      else this.#drop(client);
      const failure = exchangeFailure(this.name, req.method, e);
      this.#refused(e);
      throw failure;
    } finally {
      if (own) this.#closeClient(client);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#closer.abort(new GatewayError('gateway_closing'));
    await this.#connecting?.catch(() => undefined);
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => undefined);
    this.#credentials?.close();
  }

  /**
   * A list as a caller with the view's capabilities sees it (2026-07-28: capabilities go with each
   * request), asked as a caller that takes tasks: a tool the backend runs only as a task is listed too,
   * and the gateway's own task policy decides who sees it (a gateway in front, a session core, hides
   * such tools from callers without the extension, and an edge handler could never call them).
   */
  async #fetchList(kind: CatalogKind, view: string): Promise<Record<string, unknown>[]> {
    const capabilities = withTasksExtension((this.#capsByView.get(view) ?? {}) as Record<string, unknown>);
    // One deadline for the list, its connect included: a frozen server is not waited for past it.
    const signal = this.#bounded(AbortSignal.timeout(this.#listTimeoutMs));
    const late = (e: unknown): never => {
      if (!signal.aborted || this.#closed) throw e;
      throw new GatewayError('backend_unavailable', `${this.name} (no answer within listTimeoutMs, ${this.#listTimeoutMs} ms)`);
    };
    const caps = await this.capabilities(); // within listTimeoutMs (and at once on close)
    // Unreachable: not an empty list (its names would be "unknown" instead of on a server that is away).
    if (caps === undefined && !this.up && !this.#closed)
      throw new GatewayError('backend_unavailable', `${this.name}${this.#lastError ? ` (${this.#lastError})` : ''}`);
    if (!caps?.[LIST_METHODS[kind].capability]) return [];
    const timeoutMs = this.#listTimeoutMs;
    return fetchAllPages(kind, (method, params) => this.#forward({ method, params: params ?? {}, capabilities, timeoutMs, signal })).catch(late);
  }

  #connect(): Promise<Client> {
    if (this.#closed) return Promise.reject(new GatewayError('gateway_closing'));
    if (this.#client) return Promise.resolve(this.#client);
    // Per request, each connects itself until one has: a connect in flight belongs to its request.
    if (this.#ioPerRequest) return this.#connectOnce();
    this.#connecting ??= this.#connectOnce();
    return this.#connecting;
  }

  #connectOnce(): Promise<Client> {
    return (async () => {
      const client = new Client({ ...this.#clientInfo }, { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
      // The deadline and close() both end a connect that hangs: the client is closed (its fetches
      // abort) and the wait rejects at once.
      const signal = this.#bounded(AbortSignal.timeout(CONNECT_TIMEOUT_MS));
      const abandon = (): void => this.#closeClient(client);
      signal.addEventListener('abort', abandon, { once: true });
      try {
        await raceSignal(client.connect(this.#transport()), signal);
      } catch (e) {
        this.#unreachable(e);
        throw new GatewayError('backend_unavailable', this.name, { cause: e });
      } finally {
        signal.removeEventListener('abort', abandon);
        this.#connecting = undefined;
      }
      if (this.#closed) {
        await client.close().catch(() => undefined);
        throw new GatewayError('gateway_closing');
      }
      this.#discovered = client.getDiscoverResult();
      if (this.#ioPerRequest) {
        // Only the discovery is kept: its transport belongs to the request that connected it.
        this.#closeClient(client);
      } else client.onclose = () => this.#drop(client);
      // Said when it was not connected: an edge's /readyz asking a server that is up says nothing.
      const news = this.#client === undefined;
      this.#client = client;
      this.#failures = 0;
      this.#lastError = undefined;
      if (news) {
        this.#connectedAt = new Date().toISOString();
        this.#lists.invalidate();
        this.#log.info({}, 'backend connected (2026-07-28, stateless)');
      }
      return client;
    })();
  }

  #drop(client: Client): void {
    if (this.#client === client) this.#client = undefined;
    this.#closeClient(client);
  }

  /** Closes a client without waiting; a failure is logged (util/background.ts), never thrown. */
  #closeClient(client: Client): void {
    background(`close a client of backend ${this.name}`, () => client.close(), this.#log);
  }
}
