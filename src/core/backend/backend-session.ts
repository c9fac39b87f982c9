/**
 * One session with a legacy (2025-11-25 or older) backend: a v1 SDK `Client` over stdio, streamable
 * HTTP or HTTP+SSE, initialized with the input capabilities of the calls it will serve. The SDK keeps
 * the handshake, the backend's notifications and its requests other than for input (`ping`); the
 * session's requests (calls, lists, pings) go through its lane (request-lane.ts), the backend's
 * requests for input through backend-requests.ts.
 *
 * Backend requests (elicitation/sampling/roots) are routed to the call they belong to: over streamable
 * HTTP by the stream they arrived on (see call-tags.ts), otherwise by construction — a session
 * without that correlation serves one call at a time (`bindExclusive`). A `roots/list` that belongs to
 * no call (a server asks right after `initialized`) is answered from configuration when roots are
 * configured; otherwise, on a session that serves one principal, it is held and asked of that
 * principal's client in the next call the session serves. Any other unrelated request is refused.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { ErrorCode, ProgressNotificationSchema, type ServerCapabilities, type Implementation } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig } from '../../config.js';
import type { Logger } from '../../log.js';
import type { InputCapabilities } from '../input-capabilities.js';
import { toProgressUpdate, type ActivityLook, type CallChannel, type CancelSource, type InputCancel } from './port.js';
import type { BackendCredentials } from './backend-credentials.js';
import { CALL_ID_META, RELATED_CALL_META } from './call-tags.js';
import { GatewayError } from '../../errors.js';
import { backendError, toBackendError } from './backend-refusal.js';
import { HeldRequests } from './held-requests.js';
import { BackendRequests } from './backend-requests.js';
import { anySignal, raceSignal, sleep } from '../../util/abort.js';
import { RequestSignal } from './request-signal.js';
import { RequestLane, sdkIds, type LaneRequestOptions, type PendingRequest } from './request-lane.js';
import { allowConcurrentWrites, countTraffic, createSessionTransport } from './session-transport.js';
import { background } from '../../util/background.js';
import { copyWith } from '../../util/copy-with.js';
import { transportErrorForLog } from '../../util/transport-error-for-log.js';
import { type Liveness, type PingOutcome, Traffic, judgeLiveness } from './liveness.js';

const INPUT_METHODS = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

/** Default quiet window after `initialize` (per-server `settleMs`); the settle never lasts longer than it plus SETTLE_EXTRA_MS. */
const SETTLE_QUIET_MS = 40;
const SETTLE_EXTRA_MS = 500;
/** How long the settle's ping barrier waits for a backend that is slow to answer ping. */
const BARRIER_TIMEOUT_MS = 5_000;

export type ListKind = 'tools' | 'prompts' | 'resources';

/**
 * True when the wire says which call a backend request belongs to (streamable HTTP, the call's own
 * response stream), so concurrent calls may share a session; false for stdio, HTTP+SSE and servers
 * configured `"sessionMode": "exclusive"`.
 */
export function sharesSessions(server: ServerConfig): boolean {
  return server.kind === 'http' && server.transport === 'streamable-http' && server.sessionMode === 'shared';
}

export interface BackendSessionOptions {
  readonly server: ServerConfig;
  readonly capabilities: InputCapabilities;
  readonly roots: readonly { uri: string; name?: string | undefined }[];
  /**
   * What a session-level `roots/list` gets when no roots are configured: `defer` holds it for the next
   * call of the (single-principal) session; `config` answers the configured list, even when empty.
   */
  readonly sessionRoots: 'defer' | 'config';
  /** How long the backend must be quiet after `initialize` before the session takes a call. */
  readonly settleMs?: number | undefined;
  readonly clientInfo: { name: string; version: string };
  readonly logger: Logger;
  /** Called when the backend says one of its lists changed. */
  /** A list changed; `setup`: announced while the session was still settling after `initialize` (see connect). */
  readonly onListChanged?: (kind: ListKind, setup: boolean) => void;
  /** A subscribed resource changed (`notifications/resources/updated`). */
  readonly onResourceUpdated?: (uri: string) => void;
  /**
   * Where messages from the backend are counted (shared by every session of one HTTP server; default:
   * this session's own, as for a stdio process).
   */
  readonly traffic?: Traffic | undefined;
  /** How long the backend must be silent on every exchange before it is taken for hung (default DEFAULT_HUNG_AFTER_MS). */
  readonly hungAfterMs?: number | undefined;
  /** An HTTP backend's bearer tokens (its `auth` entry); shared by its sessions, not closed with one. */
  readonly credentials?: BackendCredentials | undefined;
}

export interface SessionRequestOptions {
  /** Cancels the request (an AbortSignal, or a call's lighter end: port.ts `CancelSource`). */
  signal: CancelSource;
  timeoutMs: number;
}

/** Default silence on every exchange after which a backend is taken for hung (`hungAfterMs`). */
export const DEFAULT_HUNG_AFTER_MS = 30_000;
/** v1 SDK: a request's deadline expired (`-32001`; the SDK's own has `data.timeout`). */
export const REQUEST_TIMEOUT_CODE = -32001;

/**
 * The JSON Schema validator of every session's SDK client. The client checks tool outputs with it in
 * its own `callTool` after its own `listTools`, which a session never uses (its calls and lists go
 * through the request lane), so it is never asked; the SDK client made an Ajv engine of its own
 * anyway, eagerly: 24.5 KiB of heap and 0.4 ms of CPU for each session started (one for each stdio
 * call that can be asked). If it ever is asked, each schema gets engines of its own, as a client's
 * own would have been: an engine shared by backends would mix their `$id`s and keep every schema.
 */
const UNASKED_VALIDATOR: jsonSchemaValidator = { getValidator: (schema) => new AjvJsonSchemaValidator().getValidator(schema) };

/** The SDK's own request deadline (`-32001` with `data.timeout`), as opposed to an error the backend sent. */
export function isLocalTimeout(e: unknown): boolean {
  const err = e as { code?: unknown; data?: { timeout?: unknown } } | null;
  return err?.code === REQUEST_TIMEOUT_CODE && typeof err.data?.timeout === 'number';
}

export class BackendSession {
  readonly server: ServerConfig;
  readonly capabilities: InputCapabilities;
  /** True when backend requests are correlated by the wire, so many calls may share the session. */
  readonly shared: boolean;
  readonly #client: Client;
  /** The transport's view of the backend's activity (stdio), once connected. */
  #activity: ActivityLook | undefined;
  readonly #options: BackendSessionOptions;
  readonly #runs = new Map<string, CallChannel>();
  /** Progress tokens of requests in flight → the call they belong to. */
  readonly #progress = new Map<string, CallChannel>();
  readonly #closeCallbacks: (() => void)[] = [];
  readonly #stderrTail: string[] = [];
  /** Session-level requests held for the next call (see `sessionRoots`). */
  readonly #held = new HeldRequests({
    closed: () => this.#closed,
    otherThan: (run) => [...this.#runs.values()].filter((r) => r !== run).at(-1),
  });
  #closedPromise: Promise<void> | undefined;
  #probing: Promise<PingOutcome> | undefined;
  /** Calls' requests in flight (shared sessions), by call id: a call whose response stream broke is failed through it. */
  readonly #inflight = new Map<string, PendingRequest>();
  /** The session's own requests, once connected (request-lane.ts). */
  #lane: RequestLane | undefined;
  readonly #traffic: Traffic;
  #exclusive: CallChannel | undefined;
  #closed = false;
  #closing = false;
  /** How its process exited (stdio), once it has: what a session that ended by itself is logged with. */
  #exitStatus: (() => { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined) | undefined;
  /** The transport closed (before the SDK hears of it: see #withdrawal). */
  #lost = false;
  #lastBackendRequestAt = 0;
  #connected = false;
  /** True once connect() has let the backend settle: what it announces from then on is news. */
  #settled = false;
  lastUsed = Date.now();

  constructor(options: BackendSessionOptions) {
    this.#options = options;
    this.server = options.server;
    this.capabilities = options.capabilities;
    this.shared = sharesSessions(options.server);
    this.#traffic = options.traffic ?? new Traffic();
    this.#client = new Client(
      { ...options.clientInfo },
      { capabilities: structuredClone(options.capabilities) as Record<string, never>, jsonSchemaValidator: UNASKED_VALIDATOR },
    );
    // The backend's requests for input are taken off the transport once connected (backend-requests.ts); what reaches the SDK is refused, or one made before.
    this.#client.fallbackRequestHandler = (req, extra) => this.#onBackendRequest(req.method, req.params, extra.signal);
    this.#client.fallbackNotificationHandler = async (n) => this.#onBackendNotification(n);
    // Progress is routed by our own token, not by the SDK's per-request handler: the SDK drops that
    // handler when the response arrives, before it has delivered a progress notification read just
    // ahead of the response (the backend's last one), which would then be lost.
    this.#client.setNotificationHandler(ProgressNotificationSchema, (n) => {
      const { progressToken, ...rest } = n.params;
      this.#progress.get(String(progressToken))?.progress(toProgressUpdate(rest));
    });
    this.#client.onclose = () => this.#onClosed();
    // Its message may quote what the backend sent (a result that echoes an answer): left out of the line.
    this.#client.onerror = (e) => options.logger.debug({ err: transportErrorForLog(e.message) }, 'backend transport error');
  }

  /** True once the session is closing or closed: it takes no new calls. */
  get closed(): boolean {
    return this.#closed || this.#closing;
  }
  get busy(): boolean {
    return this.#exclusive !== undefined || this.#runs.size > 0;
  }
  get load(): number {
    return this.#runs.size + (this.#exclusive ? 1 : 0);
  }
  /** The call this session serves alone, if it does. */
  get exclusiveRun(): CallChannel | undefined {
    return this.#exclusive;
  }
  get serverCapabilities(): ServerCapabilities | undefined {
    return this.#client.getServerCapabilities();
  }
  get serverInfo(): Implementation | undefined {
    return this.#client.getServerVersion();
  }
  /** The last lines the backend process wrote to stderr (stdio only). */
  get stderrTail(): readonly string[] {
    return this.#stderrTail;
  }
  get instructions(): string | undefined {
    return this.#client.getInstructions();
  }

  /**
   * Connects and initializes, then lets the backend settle: requests it sends right after
   * initialization (a filesystem server's first `roots/list`, say) belong to no call, but on stdio
   * nothing on the wire says so, so the session takes no call until the backend has been quiet for
   * `settleMs` (default SETTLE_QUIET_MS; at most SETTLE_EXTRA_MS more) after answering a ping (#barrier).
   * Rejects on failure or abort; the session is then closed.
   */
  async connect(signal: AbortSignal, timeoutMs: number): Promise<void> {
    const transport = createSessionTransport(
      this.server,
      this.#options.logger,
      this.#stderrTail,
      (callId, resumable) => background('backend liveness check', this.#onStreamLost(callId, resumable), this.#options.logger),
      this.#options.credentials,
    );
    const exited = transport as { exitStatus?: { readonly code: number | null; readonly signal: NodeJS.Signals | null } };
    this.#exitStatus = () => exited.exitStatus;
    // The SDK chains the onclose it finds before its own, which aborts the signals of the backend's requests.
    transport.onclose = () => {
      this.#lost = true;
    };
    // The SDK applies neither the signal nor the timeout to every transport's start (an HTTP+SSE
    // server that never sends its endpoint event would hang it): race both, and close on either.
    const deadline = anySignal([signal, AbortSignal.timeout(timeoutMs)]);
    // The SDK keeps its abort listener on the signal of `initialize` for good: aborting that signal
    // later (a closing gateway) would send notifications/cancelled for a request long answered. It gets
    // a signal of its own, cut off once the session is up (request-signal.ts). Every later request of
    // the session goes through its lane (request-lane.ts), which takes its listener off when it settles.
    const setup = new RequestSignal(signal);
    try {
      await raceSignal(this.#client.connect(transport, { signal: setup.signal, timeout: timeoutMs }), deadline);
      // `initialize` is answered: it must never be cancelled (the lifecycle forbids it), so its signal goes now.
      setup.dispose();
      this.#connected = true;
      // Before the traffic count wraps the transport: responses the lane takes are traffic too.
      const transportError = (e: Error): void => this.#options.logger.debug({ err: transportErrorForLog(e.message) }, 'backend transport error');
      this.#lane = new RequestLane(transport, sdkIds(this.#client), transportError);
      new BackendRequests(transport, INPUT_METHODS, (method, params, cancel) => this.#onBackendRequest(method, params, cancel), transportError);
      const activity = (transport as { activity?: ActivityLook }).activity;
      if (activity) this.#activity = (scope) => (this.#closed || this.#closing ? 'unknown' : activity.call(transport, scope));
      countTraffic(transport, this.#traffic);
      allowConcurrentWrites(transport);
      await this.#barrier(signal, timeoutMs);
      const started = Date.now();
      this.#lastBackendRequestAt = started;
      const quietMs = this.#options.settleMs ?? SETTLE_QUIET_MS;
      while (Date.now() - started < quietMs + SETTLE_EXTRA_MS) {
        const quiet = Date.now() - this.#lastBackendRequestAt;
        if (quiet >= quietMs) break;
        await sleep(quietMs - quiet, signal);
      }
      this.#settled = true;
    } catch (e) {
      await this.close();
      throw e;
    } finally {
      setup.dispose();
    }
  }

  /**
   * A ping answered after `notifications/initialized`: a backend reads its input in order, so what it
   * sent while handling that notification (a tool registered on initialization announces
   * tools/list_changed) has arrived before the pong, and counts as setup, not as a change some caller
   * should hear of (on a loaded machine it used to come after the quiet window). A backend that does
   * not answer ping in time is not waited for any longer.
   */
  async #barrier(signal: AbortSignal, timeoutMs: number): Promise<void> {
    try {
      await this.#laneRequest('ping', undefined, { signal, timeoutMs: Math.min(timeoutMs, BARRIER_TIMEOUT_MS) });
    } catch (e) {
      if (signal.aborted) throw e;
    }
  }

  /**
   * Pings the backend with a deadline: `answered`, `silent` (no answer in time) or `gone` (the
   * session is closed or the transport failed). Concurrent probes share one ping.
   */
  probe(timeoutMs: number): Promise<PingOutcome> {
    if (this.closed) return Promise.resolve('gone');
    this.#probing ??= this.#laneRequest('ping', undefined, { timeoutMs })
      .then(
        (): PingOutcome => 'answered',
        (e: unknown): PingOutcome => (isLocalTimeout(e) && !this.closed ? 'silent' : 'gone'),
      )
      .finally(() => (this.#probing = undefined));
    return this.#probing;
  }

  /**
   * Whether the backend is alive: it answers a ping, or it sent anything (on any session of the same
   * server) within `hungAfterMs`. `hung` only after silence on every exchange for that long.
   */
  liveness(): Promise<Liveness> {
    return judgeLiveness((ms) => this.probe(ms), this.#traffic, this.hungAfterMs);
  }

  /** See `BackendSessionOptions.hungAfterMs`. */
  get hungAfterMs(): number {
    return this.#options.hungAfterMs ?? DEFAULT_HUNG_AFTER_MS;
  }

  /**
   * A call's response stream ended or broke before its response: if the backend is gone, or silent on
   * every exchange for `hungAfterMs`, the session is dead — close it, so every request on it fails now
   * instead of at its timeout. A busy backend that answers late keeps its session and its other calls.
   */
  async #onStreamLost(callId: string, resumable: boolean): Promise<void> {
    if (this.closed) return;
    const verdict = await this.liveness();
    if (verdict === 'alive') {
      // The backend lives, but this call's response can no longer arrive (its stream is gone and cannot
      // be resumed): fail that call now rather than leave it waiting for its timeout.
      const request = resumable ? undefined : this.#inflight.get(callId);
      if (request) {
        this.#options.logger.warn({ call: callId }, "a call's response stream broke while the backend lives; that call failed (backend_closed)");
        request.abort(new GatewayError('backend_closed', `${this.server.name} (the call's response stream broke)`));
      }
      return;
    }
    if (this.closed) return;
    this.#options.logger.warn(
      { verdict, hungAfterMs: this.hungAfterMs },
      verdict === 'gone'
        ? 'backend gone (a response stream broke and the ping failed); session closed'
        : 'backend silent on every exchange (a response stream broke); session closed',
    );
    await this.close();
  }

  /** Registers `cb` for when the session closes (lost or closed). */
  onClose(cb: () => void): void {
    if (this.#closed) cb();
    else this.#closeCallbacks.push(cb);
  }

  /** Serves `run` alone on this session until `release`. */
  bindExclusive(run: CallChannel): void {
    if (this.#exclusive || this.#runs.size) throw new Error('session is busy');
    this.#exclusive = run;
    this.lastUsed = Date.now();
    // Everything the backend does now is for this call: its activity tells the call's rounds when it is quiet.
    if (this.#activity) run.watchBackend?.(this.#activity);
    this.#held.handTo(run);
  }

  /** Adds `run` to a shared session. */
  bindShared(run: CallChannel): void {
    this.#runs.set(run.id, run);
    this.lastUsed = Date.now();
    this.#held.handTo(run);
  }

  /**
   * Settles once `run` has answered (or failed) the session-level requests it was handed when bound,
   * undefined when it was handed none: its own request goes to the backend after them, so a server
   * that asked for roots at initialization has them before it serves the call (a filesystem server
   * answers a call at once, with the roots it has). Taken once.
   */
  askedFirst(run: CallChannel): Promise<void> | undefined {
    return this.#held.askedFirst(run);
  }

  release(run: CallChannel): void {
    this.#held.forget(run);
    if (this.#exclusive === run) {
      this.#exclusive = undefined;
      run.watchBackend?.(undefined);
    }
    this.#runs.delete(run.id);
    this.lastUsed = Date.now();
  }

  /**
   * Sends one request to the backend and returns its raw result. With `run`, the request carries
   * `run.id` as its progress token (progress goes to `run`), and on a shared session it is tagged so
   * the backend's requests for it are routed back to `run`.
   */
  request(method: string, params: Record<string, unknown> | undefined, options: SessionRequestOptions, run?: CallChannel): Promise<Record<string, unknown>> {
    let outParams = params;
    if (run) {
      const meta: Record<string, unknown> = { ...((params?.['_meta'] as Record<string, unknown> | undefined) ?? {}), progressToken: run.id };
      if (this.shared) meta[CALL_ID_META] = run.id;
      // Not a spread: a parked call's request holds its params (copy-with.ts, issue 30).
      outParams = copyWith(params, { _meta: meta });
      this.#progress.set(run.id, run);
    }
    const pending = this.#lane ? this.#lane.send(method, outParams, options) : undefined;
    if (run && pending) this.#inflight.set(run.id, pending);
    const started = performance.now();
    const over = (outcome: string): void => {
      // Each exchange with the backend at debug: its method, duration and outcome, never a payload.
      this.#options.logger.debug({ method, ms: Math.round(performance.now() - started), outcome }, 'backend request');
      if (run && this.#inflight.get(run.id) === pending) this.#inflight.delete(run.id);
      // Notifications read before the response are delivered first (the transport hands them over in
      // the order it read them), so the last progress has arrived by now.
      if (run) queueMicrotask(() => this.#progress.delete(run.id));
    };
    // Not an async function: a parked call would hold its suspended frame (issue 30).
    return (pending?.promise ?? Promise.reject(new Error('Not connected'))).then(
      (result) => {
        over('result');
        return result;
      },
      (e: unknown) => {
        over(options.signal.aborted ? 'cancelled' : outcomeOf(e));
        throw e;
      },
    );
  }

  /** One request of the session's own (a ping), outside any call. */
  #laneRequest(method: string, params: Record<string, unknown> | undefined, options: LaneRequestOptions): Promise<Record<string, unknown>> {
    return this.#lane ? this.#lane.request(method, params, options) : Promise.reject(new Error('Not connected'));
  }

  /**
   * Closes the session: ends the transport and, for stdio, waits until the backend's whole process
   * group has exited (stdin ends, SIGTERM to the group, SIGKILL after KILL_GRACE_MS; see
   * stdio-transport.ts). Idempotent: every caller gets the same promise.
   */
  close(): Promise<void> {
    this.#closedPromise ??= (async () => {
      this.#closing = true;
      try {
        await this.#client.close();
      } catch {
        // already gone
      }
      this.#onClosed();
    })();
    return this.#closedPromise;
  }

  #runFor(params: Record<string, unknown> | undefined): CallChannel | undefined {
    const tag = (params?.['_meta'] as Record<string, unknown> | undefined)?.[RELATED_CALL_META];
    if (typeof tag === 'string') return this.#runs.get(tag);
    return this.#exclusive;
  }

  /**
   * A request from the backend. Not an async function, nor is the relay to the call: each awaiting
   * frame would be one more suspended generator and promise chain per parked call (issue 30).
   */
  #onBackendRequest(method: string, rawParams: Record<string, unknown> | undefined, signal: InputCancel): Promise<Record<string, unknown>> {
    this.#lastBackendRequestAt = Date.now();
    if (!INPUT_METHODS.has(method)) return Promise.reject(backendError(ErrorCode.MethodNotFound, 'Method not found'));
    const run = this.#runFor(rawParams);
    const params = stripTag(rawParams);
    if (!run) {
      if (method !== 'roots/list') return Promise.reject(backendError(ErrorCode.InvalidRequest, `${method} is only relayed during a client request`));
      if (this.#options.roots.length || this.#options.sessionRoots === 'config') return Promise.resolve({ roots: this.#options.roots.map((r) => ({ ...r })) });
      // Asked on a stream of no call (a shared session's GET stream) while calls of the session's
      // principal are in flight: its latest call's client is asked now (one of them may be waiting
      // for the answer), not the next call's.
      return this.#held.hold(method, params ?? {}, signal, [...this.#runs.values()].at(-1));
    }
    // In the call's trace (it came on the session's transport, outside any request): its line carries the call's trace id.
    return run.within ? run.within(() => this.#ask(run, method, params ?? {}, signal)) : this.#ask(run, method, params ?? {}, signal);
  }

  /** Asks `run` for the input the backend requested; the answer, or the error the backend gets. */
  #ask(run: CallChannel, method: string, params: Record<string, unknown>, signal: InputCancel): Promise<Record<string, unknown>> {
    const started = performance.now();
    let answer: Promise<Record<string, unknown>>;
    try {
      answer = run.requestInput(method, params, signal, this.#withdrawal);
    } catch (e) {
      answer = Promise.reject(e);
    }
    return answer.then(
      (value) => {
        this.#logAsked(method, started, 'answered');
        return value;
      },
      (e: unknown) => {
        this.#logAsked(method, started, signal.aborted ? 'withdrawn' : outcomeOf(e));
        throw toBackendError(e);
      },
    );
  }

  /** The backend's own request (an elicitation, say) at debug: method, how long the answer took, outcome; never the answer. */
  #logAsked(method: string, started: number, outcome: string): void {
    this.#options.logger.debug({ method, ms: Math.round(performance.now() - started), outcome }, 'backend asked');
  }

  /**
   * Why the SDK aborted the signal of a backend request: `backend_closed` when the session closed (the
   * SDK gives no reason of its own then), so the call can tell a lost connection from a request the
   * backend withdrew. One function per session, read when the signal aborts: the SDK aborts the
   * signals of its requests when the transport closes, and the session has heard of it by then
   * (`#lost`, set by the transport's onclose, which the SDK runs before its own).
   */
  readonly #withdrawal = (signal: CancelSource): unknown =>
    this.#lost || this.#closed || this.#closing ? new GatewayError('backend_closed', this.server.name) : signal.reason;

  #onBackendNotification(n: { method: string; params?: Record<string, unknown> | undefined }): void {
    switch (n.method) {
      case 'notifications/message': {
        const run = this.#runFor(n.params);
        if (run && n.params) run.log(stripTag(n.params) ?? {});
        return;
      }
      // A change announced while the session settles is its own setup (a server registering what
      // this client may use, as the reference servers do for elicitation): its lists are read
      // afresh, but it is no news to announce.
      case 'notifications/tools/list_changed':
        return this.#options.onListChanged?.('tools', !this.#settled);
      case 'notifications/prompts/list_changed':
        return this.#options.onListChanged?.('prompts', !this.#settled);
      case 'notifications/resources/list_changed':
        return this.#options.onListChanged?.('resources', !this.#settled);
      case 'notifications/resources/updated': {
        const uri = n.params?.['uri'];
        if (typeof uri === 'string') this.#options.onResourceUpdated?.(uri);
        // Sent during a call: the call's too (the proxy tools report it to the scope that made the call).
        this.#runFor(n.params)?.notification(n.method, stripTag(n.params) ?? {});
        return;
      }
      default:
        this.#runFor(n.params)?.notification(n.method, stripTag(n.params) ?? {});
        return;
    }
  }

  /**
   * The backend ended the session (its process exited, its stream closed): the operator's line. A warning
   * when calls were in flight (they fail `backend_closed`), with its process's exit and its last stderr
   * lines; info otherwise (a backend may end an idle session).
   */
  #endedByItself(): void {
    const calls = this.load;
    const exit = this.#exitStatus?.();
    const fields = { calls, ...(exit ? { exitCode: exit.code, exitSignal: exit.signal } : {}) };
    // Its last stderr lines only where something was lost (they may echo what the backend was given).
    if (calls > 0)
      this.#options.logger.warn({ ...fields, stderr: this.#stderrTail.slice(-5) }, 'backend session ended with calls in flight: they fail backend_closed');
    else this.#options.logger.info(fields, 'backend session ended by the backend');
  }

  #onClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held.rejectAll(backendError(ErrorCode.InternalError, 'The session closed'));
    if (this.#connected && !this.#closing) this.#endedByItself();
    else if (this.#connected) this.#options.logger.debug({}, 'backend session closed');
    for (const cb of this.#closeCallbacks.splice(0)) cb();
  }
}

function stripTag(params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const meta = params?.['_meta'] as Record<string, unknown> | undefined;
  if (!params || !meta || !(RELATED_CALL_META in meta)) return params;
  const { [RELATED_CALL_META]: _tag, ...rest } = meta;
  const out = { ...params };
  if (Object.keys(rest).length) out['_meta'] = rest;
  else delete out['_meta'];
  return out;
}

/** How a request failed, for a debug line: its JSON-RPC code, the gateway's reason, or `failed`. */
function outcomeOf(e: unknown): string {
  if (e instanceof GatewayError) return e.code;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? String(code) : 'failed';
}
