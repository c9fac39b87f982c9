/**
 * The backend port: what the engine and the fronts need from any backend, whatever era it speaks
 * (legacy sessions or 2026-07-28 pass-through), and the `CallChannel` a call offers its backend.
 *
 * A backend never sees a call object: it talks to the call it serves through `CallChannel` (request
 * input mid-call, report progress, relay a log line). Nothing above `core/` branches on a backend
 * class; the outcome kind says what happened (ARCHITECTURE.md "The house we are moving to").
 */
import type { InputCapabilities } from '../input-capabilities.js';
import type { ListChange } from '../events.js';
import type { CancelSource, Lifeline } from '../../util/lifeline.js';

export type CatalogKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** A progress notification's fields as a ProgressUpdate (absent optionals stay absent). */
export function toProgressUpdate(p: { progress: number; total?: number | undefined; message?: string | undefined }): ProgressUpdate {
  const u: ProgressUpdate = { progress: p.progress };
  if (p.total !== undefined) u.total = p.total;
  if (p.message !== undefined) u.message = p.message;
  return u;
}

/**
 * Whether the backend serving a call may still be sending (an MRTR round's quiet signal): `busy` while
 * part of a message is read or its process is at work, `idle` when its process sleeps with nothing
 * half-read, `unknown` where that cannot be seen (HTTP backends, platforms without /proc).
 */
export type BackendActivity = 'busy' | 'idle' | 'unknown';
/**
 * How much of a backend's process tree a look at its activity reads (process-activity.ts): every
 * thread of every process (`threads`), or only each process's main thread (`main`: a read a process,
 * not a thread; enough for an operation known to ask once).
 */
export type ActivityScope = 'threads' | 'main';
/** A backend's activity, looked at in `scope` (default `threads`). */
export type ActivityLook = (scope?: ActivityScope) => BackendActivity;

/** How a backend reaches the call it serves. Implemented by the call engine. */
export interface CallChannel {
  /** The call's id (unique per gateway instance); used to correlate backend messages. */
  readonly id: string;
  /**
   * A backend request for input (elicitation/create, sampling/createMessage, roots/list) made during
   * the call. Resolves with the client's answer; rejects with `BackendRequestRefused` when it cannot be
   * relayed, or with the signal's reason when the backend withdraws it. `withdrawal`, when given, says
   * why instead of the signal's reason, read when it aborts (a backend session: `backend_closed` when
   * the session closed under the request, for which the SDK aborts the signal with no reason of its own).
   */
  requestInput(
    method: string,
    params: Record<string, unknown>,
    signal: InputCancel,
    withdrawal?: (signal: CancelSource) => unknown,
  ): Promise<Record<string, unknown>>;
  /** A progress notification the backend sent for the call. */
  progress(update: ProgressUpdate): void;
  /** A `notifications/message` the backend sent for the call (params as sent). */
  log(params: Record<string, unknown>): void;
  /**
   * Any other notification the backend sent during the call (`notifications/resources/updated`, ...),
   * params as sent: it came on a session serving this call, so it belongs to the call's principal.
   */
  notification(method: string, params: Record<string, unknown>): void;
  /**
   * Runs `fn` in the call's trace context (tracing on: what it logs carries the call's trace id), for
   * work a backend does for the call outside it (its input requests arrive on the session's transport).
   */
  within?<T>(fn: () => T): T;
  /**
   * How to see the activity of the backend that serves the call alone (a stdio session bound to it);
   * `undefined` once it no longer does.
   */
  watchBackend?(activity: ActivityLook | undefined): void;
  /**
   * The call whose input requests this one relays (a proxy tool's backend call): how its operation asks
   * (core/calls/ask-patterns.ts) and what its backend is doing are this call's, for its rounds;
   * `undefined` once it no longer relays one.
   */
  relays?(call: RelayedCall | undefined): void;
  /**
   * Since when (`Date.now()`) the call has waited for its client's answer to an input request, while
   * it does; undefined while it does not (session-pool.ts reclaims the session of one that waited too long).
   */
  waitingSince?(): number | undefined;
  /** Ends the call with `reason`: its session is needed for other work while it waits for its client. */
  reclaim?(reason: unknown): void;
}

/** What a call that relays another's input requests reads of it (CallChannel.relays). */
export interface RelayedCall {
  readonly asksTogether: boolean;
  readonly asksOnce: boolean;
  readonly waveExpectation: WaveExpectation;
  readonly backendActivity: BackendActivity;
  askedFewer(): void;
  wentOutOnce(): void;
}

/**
 * What a call's operation asked together in the wave of requests the call is in (core/calls/ask-patterns.ts):
 * more than it has made so far, as many, or not known.
 */
export type WaveExpectation = 'more' | 'met' | 'unknown';

/** Why a backend request is refused when the call it was asked of ended before its client answered. */
export const CALL_ENDED = 'The originating request has ended';

/** A backend error to send back for a backend request the gateway will not relay. */
export class BackendRequestRefused extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** The error's `data`, when the client's own error is passed on. */
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'BackendRequestRefused';
  }
}

/** The client's own error for a backend request (it refused it, or failed to answer it), passed on to the backend. */
export class ClientRefusal extends BackendRequestRefused {
  constructor(code: number, message: string, data?: unknown) {
    super(code, message, data);
    this.name = 'ClientRefusal';
  }
}

/**
 * What ends a backend's request for input: an AbortSignal, or a lifeline (a legacy session's own
 * requests for input, backend-requests.ts), which makes an AbortSignal only for what needs one.
 */
export type InputCancel = AbortSignal | Lifeline;

/** What a backend's request is cancelled with (an AbortSignal, or a call's lighter lifeline: util/lifeline.ts). */
export type { AbortListener, CancelSource } from '../../util/lifeline.js';

/** One input-capable request (tools/call, prompts/get, resources/read) to run on a backend. */
export interface BackendCall {
  readonly method: string;
  /** Params as the backend gets them (names already mapped to the backend's own). */
  readonly params: Record<string, unknown>;
  /** Who the call is for: backend sessions are never shared across principals unless configured. */
  readonly principal: string;
  /** The scopes the caller's token grants (OAuth): what the gateway's own tools check `gateway.policy` with. */
  readonly tokenScopes?: ReadonlySet<string> | undefined;
  /** The caller's state scope inside its principal (a legacy client session), when it has one. */
  readonly scope?: string | undefined;
  /** The caller's input capabilities, normalised (sessions are pooled by them). */
  readonly caps: InputCapabilities;
  /** The caller's capabilities as declared (a 2026-07-28 backend gets them as they are). */
  readonly capabilities: Record<string, unknown>;
  readonly logLevel?: string | undefined;
  /**
   * Answers the caller gave up front, and a stateless backend's own requestState on a retry. A
   * 2026-07-28 backend gets them in its params; a session backend's requests are answered from them
   * by the channel (the call holds them), so it ignores them.
   */
  readonly inputResponses?: Readonly<Record<string, Record<string, unknown>>> | undefined;
  readonly requestState?: string | undefined;
  readonly timeoutMs: number;
  /** Aborted when the call ends (made when first read: see `cancel`). */
  readonly signal: AbortSignal;
  /**
   * The call's end as `signal` tells it, cheaper to listen to: what a backend's own requests are
   * cancelled with on the hot path. Absent: listen to `signal`.
   */
  readonly cancel?: CancelSource | undefined;
  /** Aborted when the connection of the request that started the call closed (not a cancellation: see RequestContext). */
  readonly connection?: AbortSignal | undefined;
  readonly channel: CallChannel;
}

/**
 * What a backend call ended with. `input_required` and `task` come only from 2026-07-28 backends
 * (stateless: the backend call is over, its `requestState` / task carry on); a legacy backend's input
 * requests go through the channel instead and it always ends `complete` (or throws).
 */
export type BackendOutcome =
  | { kind: 'complete'; result: Record<string, unknown> }
  | { kind: 'input_required'; inputRequests: Record<string, unknown>; requestState: string | undefined }
  | { kind: 'task'; result: Record<string, unknown> };

/** What an operator needs to see about a backend (readiness endpoint, logs). Never holds secrets. */
export interface BackendHealth {
  readonly name: string;
  /** `up`: connected; `connecting`: first attempt under way; `down`: the last attempt failed (retrying with backoff). */
  readonly state: 'up' | 'connecting' | 'down';
  /** Failed connection attempts since the last success. */
  readonly failures: number;
  /** While `up`: when the current connection was made (ISO 8601). */
  readonly connectedAt?: string;
  /** Why the last attempt failed (e.g. `spawn foo ENOENT`). */
  readonly lastError?: string;
  /** The last lines a stdio backend wrote to stderr before it failed. */
  readonly stderr?: readonly string[];
}

/** A backend as the catalog, the engine and the fronts see it. */
export interface BackendPort {
  readonly name: string;
  /** Its tools and prompts keep their own names beside other backends (the gateway's own proxy tools). */
  readonly unprefixed?: boolean;
  /**
   * Its input requests are other calls' requests relayed (the proxy tools): they were limited where
   * they were made, so the sampling limits do not count them twice.
   */
  readonly relaysInput?: boolean;
  /**
   * True when a tool whose definition says `execution.taskSupport: "required"` is still served as a
   * plain call (a legacy backend runs it as a 2025-11-25 task of its own and waits for its result);
   * otherwise such a tool serves only callers that take a task (a 2026-07-28 backend's own).
   */
  readonly servesTaskToolsAsCalls?: boolean;
  /**
   * True for a tool that only carries on work already under way (the proxy tools' answers to a
   * pending request, a task's result, the activity of a scope): served while the gateway drains.
   */
  continuesWork?(tool: string): boolean;
  /** True when the backend is reachable. */
  readonly up: boolean;
  /** How long a call of this backend may wait for a client's answer (default: as long as the requestState lives). */
  readonly parkTimeoutMs?: number | undefined;
  /**
   * A backend that stands for others (the proxy tools' `execute_tool`): the park timeout of the server
   * the call with `params` goes to; undefined to use `parkTimeoutMs`.
   */
  parkTimeoutFor?(params: Record<string, unknown>): number | undefined;
  health(): BackendHealth;
  /**
   * Asks the backend now whether it answers, so `health()` is current when nothing else would have
   * noticed an outage (a stateless 2026-07-28 server holds no connection to lose); one that has not
   * answered within `timeoutMs` is down. Never rejects.
   * Absent: `health()` is kept current otherwise (a legacy backend's primary session is watched).
   */
  checkReach?(timeoutMs: number): Promise<void>;
  /** Its call sessions (a backend with a session pool): open, busy, calls queued for one, being opened. */
  readonly stats?: { readonly sessions: number; readonly busy: number; readonly waiting: number; readonly connecting: number };
  /** Connects (or starts connecting in the background). Never throws. */
  start(): Promise<void>;
  /**
   * A 2026-07-28 backend's own list changes, followed on a listen stream of its own until `signal`
   * aborts (for an edge handler, whose listen streams share nothing between requests): `onChange` per
   * `notifications/<kind>/list_changed`, the backend's cached list dropped first. Resolves once the
   * backend acknowledged the stream, or could not open it (logged); `follow.onEnd` when the backend
   * ends a stream it had acknowledged (the caller's stream should end too, so its client listens again).
   */
  followListChanges?(kinds: ReadonlySet<ListChange>, onChange: (kind: ListChange) => void, signal: AbortSignal, follow?: UpstreamFollow): Promise<void>;
  /** The backend's server capabilities, or undefined when it is unreachable. */
  capabilities(): Promise<Record<string, unknown> | undefined>;
  /**
   * A backend list (all pages), cached, as a caller with input capabilities `caps` sees it (servers
   * often show tools only to clients that declared elicitation, sampling or roots). Default: none.
   */
  list(kind: CatalogKind, opts?: { fresh?: boolean; caps?: InputCapabilities }): Promise<Record<string, unknown>[]>;
  /** The last fetched list for `caps`, without I/O. */
  cachedList(kind: CatalogKind, caps?: InputCapabilities): Record<string, unknown>[] | undefined;
  /** A request that needs no input and belongs to no call (completion/complete). */
  request(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>>;
  /** Runs one input-capable call; input requests go through `call.channel`. */
  call(call: BackendCall): Promise<BackendOutcome>;
  /**
   * `tasks/get`, `tasks/update` or `tasks/cancel` for a task the backend itself created (a 2026-07-28
   * backend answering a call with `resultType: "task"`); absent on backends that create none.
   */
  taskRequest?(method: string, params: Record<string, unknown>, signal: AbortSignal, principal?: string): Promise<Record<string, unknown>>;
  /** Closes every session; resolves when child processes are gone. Idempotent. */
  close(): Promise<void>;
}

export const LIST_METHODS: Record<CatalogKind, { method: string; field: string; capability: 'tools' | 'prompts' | 'resources' }> = {
  tools: { method: 'tools/list', field: 'tools', capability: 'tools' },
  prompts: { method: 'prompts/list', field: 'prompts', capability: 'prompts' },
  resources: { method: 'resources/list', field: 'resources', capability: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', field: 'resourceTemplates', capability: 'resources' },
};

export const MAX_LIST_PAGES = 64;
/** Deadline for connecting (and initializing) a backend session. */
export const CONNECT_TIMEOUT_MS = 20_000;

/** Fetches every page of a list with `request`. */
export async function fetchAllPages(
  kind: CatalogKind,
  request: (method: string, params: Record<string, unknown> | undefined) => Promise<Record<string, unknown>>,
): Promise<Record<string, unknown>[]> {
  const spec = LIST_METHODS[kind];
  const items: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const res = await request(spec.method, cursor ? { cursor } : undefined);
    const pageItems = res[spec.field];
    if (Array.isArray(pageItems)) items.push(...(pageItems as Record<string, unknown>[]));
    cursor = typeof res['nextCursor'] === 'string' && res['nextCursor'] ? res['nextCursor'] : undefined;
    if (!cursor) break;
  }
  return items;
}

/** Who a followed backend listen stream is for, and what to do when the backend ends it. */
export interface UpstreamFollow {
  /** The caller, named to a session core that keeps callers apart (`forwardPrincipal`). */
  readonly principal?: string | undefined;
  readonly onEnd?: (() => void) | undefined;
}
