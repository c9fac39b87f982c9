/**
 * The MRTR front for tools/call, prompts/get and resources/read (2026-07-28 basic/patterns/mrtr.mdx):
 * each request is one round of a call, handled in named steps.
 *
 * 1. Read the request (`readRoundRequest`, round-request.ts) and `bindRound`: digest what its
 *    requestState is bound to, resolve its route (on every round: the Mcp-Param-* headers are checked
 *    each time) and decide whether its call may become a task.
 * 2. `start` a call (a fresh request, or the next round of a 2026-07-28 backend, whose own state rides
 *    sealed inside ours: stateless, any instance carries it on), or `retryParked`: take a parked call
 *    back (find its owner, claim the round once, hand the answers over).
 * 3. `follow` the call: wait for the round's end (round-waiter.ts), then `promote` it to a task,
 *    `park` it for its next round (`input_required` with a requestState sealing {call, instance,
 *    round}), or answer its end (answer-end.ts).
 *
 * What the front keeps of a call between requests (round, relay position, quota units, expiry, calls
 * that ended while parked) is the parking's (parking.ts). State problems are -32602 with a stable
 * message and `data.reason`; a bad retry never disturbs the call (everything is checked before it is
 * touched). This front's policies: a client that goes away while its round waits cancels the call; a
 * parked call counts against the parked-call quotas and is cancelled when its requestState expires.
 */
import type { Quotas } from '../../cluster/quotas.js';
import { capabilityKey, inputCapabilitiesOf, type InputCapabilities } from '../../core/input-capabilities.js';
import { templateMatching, type Catalog, type Route } from '../../core/catalog.js';
import { itemNamed } from '../../core/named-item.js';
import type { Call, PendingInput } from '../../core/calls/call.js';
import type { CallEngine, StartCall } from '../../core/calls/call-engine.js';
import type { InputResponseMap } from '../../core/calls/input-responses.js';
import { GatewayError, INPUT_RESPONSES_INVALID, forbiddenError, invalidParams, requestStateError } from '../../errors.js';
import type { AccessPolicy } from '../../core/access-policy.js';
import type { Metrics } from '../../observe/metrics.js';
import type { RequestStateCodec, StatePayload } from '../../protocol/request-state.js';
import type { FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import { checkParamHeaders } from '../../protocol/rev-2026-07-28/param-headers.js';
import { inputRequiredResult, type ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import { createTaskResult, declaresTasks, type TaskSnapshot } from '../../protocol/rev-2026-07-28/tasks.js';
import type { BackgroundLog } from '../../util/background.js';
import type { Clock } from '../../util/clock.js';
import type { RequestContext } from '../dialect.js';
import { taskPolicyFor, type TaskPolicySource } from '../tasks/policy.js';
import type { TaskRegistry } from '../tasks/registry.js';
import type { RemoteTaskIds } from '../tasks/remote.js';
import { answerEnd, sealedTrace, type AnswerEndDeps } from './answer-end.js';
import { parkedRound, type ParkedRound } from './parked-round.js';
import { Parking, type CallBook, type ParkedCall } from './parking.js';
import { digestOnDemand, promotionFor, readRoundRequest, type RoundBinding, type RoundRequest } from './round-request.js';
import { waitForRound, type QuietGapOf, type RelayView, type RoundEnd } from './round-waiter.js';
import type { GatewaySettings } from '../../config.js';
import { operationOf } from '../../core/calls/ask-patterns.js';

export interface RoundsOptions {
  readonly coalesceMs: number;
  /**
   * The quiet gap after the last request of a backend whose activity cannot be seen, that ends an
   * input round's window early (round-waiter.ts `quietMs`): a number, or a function asked when a round
   * needs it (the Node gateway's, stretched by the measured load for operations that ask for things
   * together: gateway/quiet-gap.ts).
   */
  readonly coalesceQuietMs?: number | QuietGapOf | undefined;
  /** How long a parked call waits for its retry (the requestState lifetime). */
  readonly parkTtlMs: number;
  readonly maxParkedPerPrincipal: number;
  readonly maxParkedTotal: number;
}

/** The rounds' options as `gateway` configures them, with the quiet gap the composition root measures (default: as configured). */
export function roundsOptionsOf(settings: GatewaySettings, coalesceQuietMs: RoundsOptions['coalesceQuietMs'] = settings.coalesceQuietMs): RoundsOptions {
  return {
    coalesceMs: settings.coalesceMs,
    coalesceQuietMs,
    parkTtlMs: settings.requestStateTtlSeconds * 1000,
    maxParkedPerPrincipal: settings.maxParkedPerPrincipal,
    maxParkedTotal: settings.maxParkedTotal,
  };
}

export interface RoundsDeps {
  readonly catalog: Catalog;
  readonly engine: CallEngine;
  readonly quotas: Quotas;
  readonly codec: RequestStateCodec;
  readonly stamp: ResultStamp;
  readonly options: RoundsOptions;
  /** True once the gateway drains or closed (it takes no new work): fresh calls are refused, retries go on. */
  readonly stopping: () => boolean;
  /** Times parked-call expiry. */
  readonly clock: Clock;
  /** Where a failed background step (a quota unit given back, a claim forgotten) is reported. */
  readonly log?: BackgroundLog | undefined;
  /** Told each round's think time and each call's rounds (parking.ts). */
  readonly metrics?: Metrics | undefined;
  /** Who may call what (`gateway.policy`); none: everyone everything. */
  readonly access?: AccessPolicy | undefined;
  /** Tasks (extension io.modelcontextprotocol/tasks): where promoted calls go, and when a tool is promoted. */
  readonly tasks: {
    readonly registry: TaskRegistry;
    readonly policy: TaskPolicySource;
    readonly remote: RemoteTaskIds;
    /** Cluster mode: the last written state of a task whose instance is gone. */
    readonly elsewhere?: ((taskId: string, principal: string) => Promise<TaskSnapshot | undefined>) | undefined;
  };
}

/** What another front may ask of a round beyond the request itself. */
export interface RoundOptions {
  /**
   * Make the call a task after this long, whatever the request declared (the draft dialect's explicit
   * `task` hint). A tool marked `forbidden` still never becomes one.
   */
  readonly promoteAfterMs?: number;
  /** The task's lifetime, when the client asked for less than the configured one. */
  readonly taskTtlMs?: number | undefined;
  /**
   * Told about each round this request parks (`input_required` for a call this instance holds), for a
   * front that fulfils the input itself while its request stays open (the legacy client route).
   */
  readonly parked?: ((round: ParkedRound) => void) | undefined;
  /**
   * The caller takes a task whatever its capabilities declare (the draft dialect, whose `task` hint
   * asks for one): `tools/list` shows it the tools that need one.
   */
  readonly takesTasks?: boolean;
}

/** Serves one round request: its result, or a thrown wire or gateway error. */
export type RoundHandler = (req: FrontRequest, ctx: RequestContext, opts?: RoundOptions) => Promise<Record<string, unknown>>;

/** The handler, and the calls it holds parked (for the admin page and the metrics). */
export type Rounds = RoundHandler & { readonly parked: () => ParkedCall[] };

/** One request's round, as each step sees it. */
interface Round {
  readonly req: FrontRequest;
  readonly ctx: RequestContext;
  readonly opts: RoundOptions;
  readonly request: RoundRequest;
  readonly binding: RoundBinding;
  readonly route: Route;
  /** What its call's ask pattern is learned under (core/calls/ask-patterns.ts), if anything. */
  readonly operation: string | undefined;
  /** The input capabilities the request declared (what the call may ask of its client). */
  readonly caps: InputCapabilities;
}

type Answer = Record<string, unknown>;

/** The front's shared parts, as every step of a round sees them. */
interface Front {
  readonly deps: RoundsDeps;
  /** What the front keeps of its calls between requests. */
  readonly parking: Parking;
  /** What answering a call's end needs. */
  readonly ends: AnswerEndDeps;
}

export function createRounds(deps: RoundsDeps): Rounds {
  const { engine, options } = deps;
  const parking = new Parking({
    quotas: deps.quotas,
    clock: deps.clock,
    log: deps.log,
    metrics: deps.metrics,
    maxParkedPerPrincipal: options.maxParkedPerPrincipal,
    maxParkedTotal: options.maxParkedTotal,
    rememberMs: options.parkTtlMs,
  });
  const front: Front = { deps, parking, ends: { codec: deps.codec, instanceId: engine.instanceId, stamp: deps.stamp, remote: deps.tasks.remote } };
  const rounds: RoundHandler = (req, ctx, opts = {}) => handle(front, req, ctx, opts);
  return Object.assign(rounds, { parked: () => parking.parked() });
}

/** Reads and binds the request, then starts a call, carries a 2026-07-28 backend's round on, or retries a parked call. */
async function handle(front: Front, req: FrontRequest, ctx: RequestContext, opts: RoundOptions): Promise<Answer> {
  const { deps } = front;
  const request = readRoundRequest(req);
  // Draining: a retry (requestState) carries a call on, and so does a tool known to continue work under
  // way (a proxy tool's answer to a pending question); anything else goes elsewhere before it is looked up.
  if (request.requestState === undefined && deps.stopping() && !continuesWork(deps.catalog, req, request.name)) throw new GatewayError('gateway_draining');
  const bound = await bindRound(front, req, ctx, opts, request);
  if (request.requestState === undefined) return start(front, bound, undefined);
  const opened = await deps.codec.open(request.requestState, bound.binding);
  if (!opened.ok) throw requestStateError(opened.error);
  const { upstream, trace } = opened.value;
  // The call's trace goes on into the next round's state (its first request span stays every round's parent).
  const round = trace === undefined ? bound : { ...bound, binding: { ...bound.binding, trace } };
  if (upstream === undefined) return retryParked(front, round, opened.value);
  // A 2026-07-28 backend's round: stateless, any instance may carry it on, but only to that backend.
  if (upstream.backend !== round.route.backend.name) throw requestStateError('request');
  // Charged as a new call: such a state is not claimed once, and a replayed one must not pass the limits.
  return start(front, round, upstream.state || undefined);
}

/** The `parkTimeoutMs` of the server a call with `params` goes to (the proxy tools': that of the server `execute_tool` names), if set. */
function serverParkTimeout(route: Route, params: Record<string, unknown>): number | undefined {
  return route.backend.parkTimeoutFor?.(params) ?? route.backend.parkTimeoutMs;
}

/** Whether `req` calls a tool its backend's last known list holds and says only continues work under way. */
function continuesWork(catalog: Catalog, req: FrontRequest, name: string): boolean {
  if (req.method !== 'tools/call') return false;
  const route = catalog.resolveKnown('tools', name, inputCapabilitiesOf(req.capabilities));
  return route?.backend.continuesWork?.(route.name) ?? false;
}

/** The request's binding (digest, park time, promotion) and route, resolved on every round. */
async function bindRound(front: Front, req: FrontRequest, ctx: RequestContext, opts: RoundOptions, request: RoundRequest): Promise<Round> {
  const { deps } = front;
  const digested = digestOnDemand(req.method, request.bound, deps.codec.digest);
  const caps = inputCapabilitiesOf(req.capabilities);
  // A name the backend's last known list holds: resolved with no I/O and no promise (most calls).
  const known = req.method === 'resources/read' ? undefined : deps.catalog.resolveKnown(req.method === 'tools/call' ? 'tools' : 'prompts', request.name, caps);
  const route = known ?? (await resolveRoute(deps.catalog, req.method, request.name, caps));
  checkAccess(deps.access, ctx, req.method, route);
  const parkMs = Math.min(deps.options.parkTtlMs, serverParkTimeout(route, req.params) ?? Infinity);
  const promoteAfterMs = req.method === 'tools/call' ? checkTool(deps.tasks.policy, req, opts, request.name, route, caps) : undefined;
  const binding: RoundBinding = {
    principal: ctx.principal,
    method: req.method,
    get digest() {
      return digested.digest;
    },
    name: request.name,
    parkMs,
    promoteAfterMs,
    taskTtlMs: opts.taskTtlMs,
  };
  // A name the last known list holds (`known`) is one already; anything else is looked at (ask-patterns.ts).
  const operation = known ? route.name : operationOf(route, req.method, caps);
  return { req, ctx, opts, request, binding, route, operation, caps };
}

/**
 * A tools/call's Mcp-Param-* headers (SEP-2243) against the tool's schema, checked on every round;
 * returns after how long its call may become a task (undefined: never on this request).
 */
function checkTool(policies: TaskPolicySource, req: FrontRequest, opts: RoundOptions, name: string, route: Route, caps: InputCapabilities): number | undefined {
  // The list as these capabilities see it; before one was fetched, as any other view does (what a tool
  // declares, its task support and its schema, is the same in every view).
  const tools = route.backend.cachedList('tools', caps) ?? route.backend.cachedList('tools');
  const tool = tools && itemNamed(tools, route.name);
  checkParamHeaders(tool?.['inputSchema'], req.params['arguments'], req.paramHeader);
  const policy = taskPolicyFor(policies, route.backend, route.name, tool);
  const after = promotionFor(policy, { declared: declaresTasks(req.capabilities), hintMs: opts.promoteAfterMs }, name);
  return policies.promotes === false ? undefined : after;
}

/**
 * Starts a call (a fresh request, or a 2026-07-28 backend's next round with its `upstreamState`, which
 * rate limits charge as a new call) and follows it.
 */
async function start(front: Front, round: Round, upstreamState: string | undefined): Promise<Answer> {
  const { req, ctx, request, route } = round;
  // The backend's name set by assignment (a computed key in the literal is a runtime call in V8).
  const params: Record<string, unknown> = { ...request.forwarded };
  params[request.field] = route.name;
  const spec: StartCall = {
    principal: ctx.principal,
    tokenScopes: ctx.tokenScopes,
    scope: ctx.scope,
    method: req.method,
    backend: route.backend,
    params,
    operation: round.operation,
    caps: round.caps,
    capabilities: req.capabilities,
    logLevel: req.logLevel,
    inputResponses: request.answers,
    requestState: upstreamState,
  };
  // The connection goes to this start only: the book keeps `spec` for a task's resume, which has its own.
  // Read only when something asks (the proxy tools): a legacy request's is an AbortSignal made then.
  const call = await front.deps.engine.start(
    'connection' in ctx
      ? {
          ...spec,
          get connection() {
            return ctx.connection;
          },
        }
      : spec,
  );
  return follow(front, call, front.parking.bookOf(call, spec), round);
}

/**
 * The retry of a parked call's round: the call is found on this instance (or the retry learns where
 * it went), the answers are checked, the round is claimed once, the answers go to the call, and the
 * call is followed again.
 */
async function retryParked(front: Front, round: Round, sealed: StatePayload): Promise<Answer> {
  const { deps, parking } = front;
  const { engine } = deps;
  if (sealed.instance !== engine.instanceId) {
    const owner = await engine.ownerOf(sealed.call);
    throw requestStateError(owner !== undefined && owner !== engine.instanceId ? 'instance' : 'gone');
  }
  const call = engine.get(sealed.call);
  if (!call || call.done || call.principal !== round.ctx.principal) return answerEnded(front, round, sealed);
  const book = parking.bookOf(call);
  if (book.round !== sealed.round) throw requestStateError('stale');
  const { answers } = round.request;
  const checked = call.checkAnswers(answers);
  if (!checked.ok) throw invalidParams(checked.error, INPUT_RESPONSES_INVALID);
  if (!parking.claim(call, sealed.round)) throw requestStateError('stale');
  call.setCapabilities(round.caps);
  call.answer(answers);
  return follow(front, call, book, round);
}

/** The retry of a call that is no longer live: what the backend finished with, or why it is gone. */
async function answerEnded(front: Front, round: Round, sealed: StatePayload): Promise<Answer> {
  const ended = front.parking.ended(sealed.call, round.ctx.principal, sealed.round);
  switch (ended.kind) {
    case 'finished':
      return answerEnd(front.ends, ended.backend, ended.outcome, round.binding);
    case 'expired':
      // The backend gave up on its own request (its timeout, not ours): say so, not only that the call is gone.
      throw new GatewayError('backend_request_expired', ended.backend);
    case 'reclaimed':
      // Its session went to another call while it waited (gateway.reclaimParkedAfterMs): start it again.
      throw new GatewayError('call_reclaimed', ended.backend);
    case 'answered':
      throw requestStateError('stale', 'the call has ended since');
    case 'gone':
      throw requestStateError('gone', ended.why);
  }
}

/** Follows the call to the round's end and answers it: a task, an input round, or how the call ended. */
async function follow(front: Front, call: Call, book: CallBook, round: Round): Promise<Answer> {
  let promoteAfterMs = round.binding.promoteAfterMs;
  for (;;) {
    const end = await waitForEnd(call, book, round, front.deps.options, promoteAfterMs);
    if (end.kind === 'done') return answerEnd(front.ends, call.backend, end.outcome, round.binding);
    if (end.kind === 'promote') {
      const task = await promote(front, call, book, round);
      if (task) return task;
      promoteAfterMs = undefined; // no room for another task: the client waits for its answer as before
      continue;
    }
    const parked = await park(front, call, book, end.pending, round);
    if (parked) return parked;
    // The call ended while it was being parked: the next wait ends at once, with how it ended.
  }
}

/** Waits for the round's end, relaying the call's events from the book's cursor; a client that goes away cancels the call. */
async function waitForEnd(call: Call, book: CallBook, round: Round, window: RoundsOptions, promoteAfterMs: number | undefined): Promise<RoundEnd> {
  let end: RoundEnd;
  try {
    const { req, ctx } = round;
    // One literal of one shape (a spread here made a new hidden class per call: a hot path).
    end = await waitForRound(call, {
      sink: ctx.sink,
      progressToken: req.progressToken,
      logLevel: req.logLevel,
      logTap: ctx.logTap,
      // The answer's lifeline where the HTTP layer gave one: no AbortSignal made for a round (util/lifeline.ts).
      signal: ctx.end ?? ctx.signal,
      coalesceMs: window.coalesceMs,
      quietMs: window.coalesceQuietMs,
      since: book.relay.seq,
      promoteAfterMs,
    });
  } catch (e) {
    call.cancel(new GatewayError('cancelled', 'the client went away'));
    throw e;
  }
  book.relay.seq = end.seq;
  return end;
}

/**
 * Makes the call a task: from now on it is read through `tasks/get`, not through rounds. Undefined
 * when the principal's task quota is full; any failure cancels the call.
 */
async function promote(front: Front, call: Call, book: CallBook, round: Round): Promise<Answer | undefined> {
  try {
    return await makeTask(front, call, book, round);
  } catch (e) {
    call.cancel(e);
    throw e;
  }
}

async function makeTask(front: Front, call: Call, book: CallBook, round: Round): Promise<Answer | undefined> {
  const { engine, tasks, stamp } = front.deps;
  const { registry } = tasks;
  const started = book.start;
  // How the task carries a 2026-07-28 backend's call on with its answers: a new call, started the same way.
  const resume = started
    ? (inputResponses: InputResponseMap, requestState: string | undefined) => engine.start({ ...started, inputResponses, requestState, continues: true })
    : undefined;
  let task;
  try {
    // Its waits for input hold a legacy backend's session as a parked call's do: as long as its server's parkTimeoutMs.
    const inputTimeoutMs = serverParkTimeout(round.route, round.req.params);
    task = await registry.create(call, round.ctx.principal, { ttlMs: round.binding.taskTtlMs, resume, inputTimeoutMs });
  } catch (e) {
    if (e instanceof GatewayError && e.code === 'task_limit') return undefined;
    throw e;
  }
  // The client went away while the task was being made: nobody will ever know its id.
  if ((round.ctx.end ?? round.ctx.signal).aborted) {
    registry.cancel(task);
    throw new GatewayError('cancelled', 'the client went away');
  }
  await front.parking.release(call); // a task is not a parked call: what earlier input rounds held goes back
  return createTaskResult(registry.snapshot(task), stamp);
}

/** Parks the call for the retry of its next round and answers `input_required`; undefined when the call ended meanwhile. */
async function park(front: Front, call: Call, book: CallBook, pending: readonly PendingInput[], round: Round): Promise<Answer | undefined> {
  const { deps, ends } = front;
  // Recorded in the call directory before its requestState leaves (a retry may reach another
  // instance), at the same time as the parked-call quota is taken: on a cluster, two Redis round trips at once.
  const published = deps.engine.publish(call).catch((e: unknown) => {
    call.cancel(e); // nothing may name a call the directory does not know: it ends, and gives back what it holds
    throw e;
  });
  const [next] = await Promise.all([front.parking.park(call, round.binding.parkMs), published]);
  if (next === undefined) return undefined;
  const inputRequests: Record<string, unknown> = {};
  for (const p of pending) inputRequests[p.key] = { method: p.method, params: p.params };
  const token = await deps.codec.seal({ call: call.id, instance: ends.instanceId, round: next, ...sealedTrace(round.binding) }, round.binding);
  const keys = pending.map((p) => p.key);
  round.opts.parked?.(parkedRound(call, keys, (outcome) => answerEnd(ends, call.backend, outcome, round.binding), relayViewOf(round), book.relay));
  return inputRequiredResult(inputRequests, token, deps.stamp);
}

/** Where a round relays its call's events: the request's stream, under its progress token and log level. */
function relayViewOf({ req, ctx }: Round): RelayView {
  return { sink: ctx.sink, progressToken: req.progressToken, logLevel: req.logLevel, logTap: ctx.logTap };
}

/** Refuses a call the policy does not allow the caller (`forbidden`), before anything reaches the backend. */
function checkAccess(policy: AccessPolicy | undefined, ctx: RequestContext, method: string, route: Route): void {
  if (!policy) return;
  const kind = method === 'tools/call' ? 'tools' : method === 'prompts/get' ? 'prompts' : 'resources';
  const access = policy.for(ctx);
  // A URI resolved by no template (listed, or written in another case) is checked against the template
  // any of its forms matches on its backend too, as read_resource does.
  const template = kind === 'resources' ? (route.template ?? templateMatching(route.name, route.backend.cachedList('resourceTemplates') ?? [])) : undefined;
  const allowed = kind === 'resources' ? access.allowsResource(route.backend.name, route.name, template) : access.allows(kind, route.backend.name, route.name);
  if (allowed) return;
  throw forbiddenError(kind === 'tools' ? 'tool' : kind === 'prompts' ? 'prompt' : 'resource', route.name, route.backend.name);
}

async function resolveRoute(catalog: Catalog, method: string, name: string, caps: InputCapabilities): Promise<Route> {
  const route =
    method === 'resources/read' ? await catalog.resolveResource(name, caps) : await catalog.resolve(method === 'tools/call' ? 'tools' : 'prompts', name, caps);
  if (route) return route;
  if (method === 'resources/read') throw invalidParams(`Resource not found: ${name}`, { uri: name });
  const what = method === 'tools/call' ? 'tool' : 'prompt';
  throw invalidParams(`Unknown ${what}: ${name}${await hiddenFrom(catalog, method, name, caps, what)}`);
}

/** Every input capability a client may declare: what a backend shows its fullest list to. */
const EVERY_INPUT: InputCapabilities = { elicitation: { form: {}, url: {} }, sampling: { context: {}, tools: {} }, roots: {} };
const EVERY_INPUT_KEY = capabilityKey(EVERY_INPUT);

/**
 * Why a name unknown to this caller may still be a backend's: servers show some tools and prompts
 * only to clients that declared elicitation, sampling or roots. When the fullest view has it, the
 * refusal says so, and what the caller declared; otherwise nothing.
 */
async function hiddenFrom(catalog: Catalog, method: string, name: string, caps: InputCapabilities, what: string): Promise<string> {
  if (capabilityKey(caps) === EVERY_INPUT_KEY) return '';
  const listed = await catalog.lists(method === 'tools/call' ? 'tools' : 'prompts', name, EVERY_INPUT).catch(() => false);
  if (!listed) return '';
  const declared = (['elicitation', 'sampling', 'roots'] as const).filter((c) => caps[c] !== undefined);
  return ` (its server lists this ${what} only to clients that declare more input capabilities: elicitation, sampling, roots, or more of their modes; this request declared ${declared.length ? declared.join(', ') : 'none'})`;
}
