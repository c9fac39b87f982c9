/**
 * The MRTR front for tools/call, prompts/get and resources/read (2026-07-28 basic/patterns/mrtr.mdx).
 *
 * A fresh request starts a call on the engine and waits for the round's end; input requests become an
 * `input_required` result whose requestState seals {call, instance, round}. A retry opens and verifies
 * the state, claims its round once (the round-claims seam), hands the answers to the call and waits
 * again. A 2026-07-28 backend's own `input_required` passes through with its state sealed inside ours
 * (stateless: any instance can carry the retry on). State problems are -32602 with a stable message
 * and `data.reason`; a bad retry never disturbs the call (everything is checked before it is touched).
 *
 * This front's policies: a client that goes away while its round waits cancels the call; a call waiting
 * for a retry (parked) counts against the parked-call quotas and is cancelled when its requestState
 * expires.
 */
import type { Quotas } from '../../cluster/quotas.js';
import type { RoundClaims } from '../../cluster/round-claims.js';
import { inputCapabilitiesOf, type InputCapabilities } from '../../core/capabilities.js';
import type { Catalog, Route } from '../../core/catalog.js';
import type { Call, CallOutcome } from '../../core/calls/call.js';
import type { CallEngine, StartCall } from '../../core/calls/call-engine.js';
import { parseInputResponses, type InputResponseMap } from '../../core/calls/input-responses.js';
import { GatewayError, ProtocolError, WireCode, bareMessage, invalidParams, requestStateError, toWireError } from '../../errors.js';
import type { RequestStateCodec } from '../../protocol/request-state.js';
import type { FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import { checkParamHeaders } from '../../protocol/rev-2026-07-28/param-headers.js';
import { completeResult, inputRequiredResult, type ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import { TASKS_EXTENSION, createTaskResult, declaresTasks, relayedTaskResult, type TaskSnapshot } from '../../protocol/rev-2026-07-28/tasks.js';
import { TooDeepError, digestOf } from '../../util/canonical-json.js';
import { background, type BackgroundLog } from '../../util/background.js';
import type { Clock, ClockTimer } from '../../util/clock.js';
import type { RequestContext } from '../dialect.js';
import { taskPolicyFor, type TaskPolicySource } from '../tasks/policy.js';
import type { TaskRegistry } from '../tasks/registry.js';
import type { RemoteTaskIds } from '../tasks/remote.js';
import { parkedRound, type ParkedRound } from './parked-round.js';
import { waitForRound } from './round-waiter.js';

export interface RoundsOptions {
  readonly coalesceMs: number;
  /** How long a parked call waits for its retry (the requestState lifetime). */
  readonly parkTtlMs: number;
  readonly maxParkedPerPrincipal: number;
  readonly maxParkedTotal: number;
}

export interface RoundsDeps {
  readonly catalog: Catalog;
  readonly engine: CallEngine;
  readonly claims: RoundClaims;
  readonly quotas: Quotas;
  readonly codec: RequestStateCodec;
  readonly stamp: ResultStamp;
  readonly options: RoundsOptions;
  /** True while the gateway drains: fresh calls are refused, retries go on. */
  readonly draining: () => boolean;
  /** Times parked-call expiry. */
  readonly clock: Clock;
  /** Where a failed background step (a quota unit given back, a claim forgotten) is reported. */
  readonly log?: BackgroundLog | undefined;
  /** Tasks (extension io.modelcontextprotocol/tasks): where promoted calls go, and when a tool is promoted. */
  readonly tasks: {
    readonly registry: TaskRegistry;
    readonly policy: TaskPolicySource;
    readonly remote: RemoteTaskIds;
    /** Cluster mode: the last written state of a task whose instance is gone. */
    readonly elsewhere?: ((taskId: string, principal: string) => Promise<TaskSnapshot | undefined>) | undefined;
  };
}

/** The MRTR bookkeeping of one parked or running call. */
interface Book {
  /** Rounds answered with `input_required` so far. */
  round: number;
  /** Events relayed so far. */
  seq: number;
  /** Quota keys held while the call is parked or between rounds. */
  quota: readonly string[] | undefined;
  /** True from an `input_required` answer until its retry claims the round. */
  parked: boolean;
  expiry: ClockTimer | undefined;
}

const NAME_FIELD: Record<string, 'name' | 'uri'> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

async function resolveRoute(catalog: Catalog, method: string, name: string, caps: InputCapabilities): Promise<Route> {
  const route =
    method === 'resources/read' ? await catalog.resolveResource(name, caps) : await catalog.resolve(method === 'tools/call' ? 'tools' : 'prompts', name, caps);
  if (route) return route;
  if (method === 'resources/read') throw invalidParams(`Resource not found: ${name}`, { uri: name });
  throw invalidParams(`Unknown ${method === 'tools/call' ? 'tool' : 'prompt'}: ${name}`);
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

export function createRounds(deps: RoundsDeps): (req: FrontRequest, ctx: RequestContext, opts?: RoundOptions) => Promise<Record<string, unknown>> {
  const { engine, options } = deps;
  const books = new Map<string, Book>();
  /** How each call was started, so a task can carry a stateless backend's call on with its answers. */
  const starts = new WeakMap<Call, StartCall>();
  const endedWhileParked = createEndedCalls(deps.clock, options.maxParkedTotal);

  const bookOf = (call: Call): Book => {
    let book = books.get(call.id);
    if (!book) {
      const created: Book = { round: 0, seq: 0, quota: undefined, expiry: undefined, parked: false };
      books.set(call.id, created);
      call.onDone(() => {
        books.delete(call.id);
        if (created.parked) endedWhileParked.add(call, created.round, options.parkTtlMs);
        created.expiry?.cancel();
        const quota = created.quota;
        if (quota) background('give back a parked-call quota unit', () => deps.quotas.release(quota), deps.log);
        created.quota = undefined; // given back once, whoever else held on to the book
        background('forget the round claims of a call', () => deps.claims.forget(call.id), deps.log);
      });
      book = created;
    }
    return book;
  };

  /** Waits for the round's end and answers it; seals the next round when input is needed. */
  async function answerRound(call: Call, req: FrontRequest, ctx: RequestContext, stateCtx: StateCtx, opts: RoundOptions): Promise<Record<string, unknown>> {
    const book = bookOf(call);
    let end;
    let promoteAt = stateCtx.promoteAfterMs !== undefined ? Date.now() + stateCtx.promoteAfterMs : undefined;
    for (;;) {
      try {
        end = await waitForRound(call, {
          signal: ctx.signal,
          coalesceMs: options.coalesceMs,
          since: book.seq,
          sink: ctx.sink,
          progressToken: req.progressToken,
          logLevel: req.logLevel,
          logTap: ctx.logTap,
          promoteAt,
        });
      } catch (e) {
        call.cancel(new GatewayError('cancelled', 'the client went away'));
        throw e;
      }
      book.seq = end.seq;
      if (end.kind !== 'promote') break;
      let created;
      try {
        created = await promote(call, book, ctx.principal, stateCtx.taskTtlMs, ctx.signal);
      } catch (e) {
        call.cancel(e);
        throw e;
      }
      if (created) return created;
      promoteAt = undefined; // no room for another task: the client waits for its answer as before
    }
    if (end.kind === 'input') {
      if (!book.quota) {
        const keys = [`parked:${call.principal}`, 'parked:*'];
        const held = await deps.quotas.acquire([
          { key: keys[0]!, limit: options.maxParkedPerPrincipal },
          { key: keys[1]!, limit: options.maxParkedTotal },
        ]);
        if (!held) {
          const error = new GatewayError('parked_call_limit');
          call.cancel(error);
          throw error;
        }
        if (call.done) {
          // It ended while the quota was being taken (its cleanup found none to give back): give it
          // back here and answer with how it ended.
          await deps.quotas.release(keys);
          return answerRound(call, req, ctx, stateCtx, opts);
        }
        book.quota = keys;
      }
      book.round += 1;
      book.parked = true;
      book.expiry = deps.clock.schedule(() => call.cancel(new GatewayError('cancelled', 'nobody answered in time')), stateCtx.parkMs);
      const inputRequests: Record<string, unknown> = {};
      for (const p of end.pending) inputRequests[p.key] = { method: p.method, params: p.params };
      const token = await deps.codec.seal({ call: call.id, instance: engine.instanceId, round: book.round }, stateCtx);
      opts.parked?.(
        parkedRound(
          call,
          end.pending.map((p) => p.key),
          (outcome) => answerEnd(call.backend, outcome, req, ctx, stateCtx),
          {
            sink: ctx.sink,
            progressToken: req.progressToken,
            logLevel: req.logLevel,
            logTap: ctx.logTap,
            get seq() {
              return book.seq;
            },
            set seq(seq: number) {
              book.seq = seq;
            },
          },
        ),
      );
      return inputRequiredResult(inputRequests, token, deps.stamp);
    }
    return answerEnd(call.backend, end.outcome, req, ctx, stateCtx);
  }

  /** The answer to a request whose call has ended. */
  async function answerEnd(
    backend: string,
    outcome: CallOutcome,
    req: FrontRequest,
    ctx: RequestContext,
    stateCtx: StateCtx,
  ): Promise<Record<string, unknown>> {
    if (outcome.kind === 'error') throw mapBackendError(req.method, stateCtx.name, outcome.error);
    const done = outcome.outcome;
    switch (done.kind) {
      case 'complete':
        return completeResult(done.result, deps.stamp, req.method === 'resources/read');
      case 'input_required': {
        const sealed = await deps.codec.seal(
          { call: '', instance: engine.instanceId, round: 0, upstream: { backend, state: done.requestState ?? '' } },
          stateCtx,
        );
        return inputRequiredResult(done.inputRequests, sealed, deps.stamp);
      }
      case 'task': {
        // A 2026-07-28 backend's own task (only a caller that declared the extension can get one): its
        // fields pass through under a wrapped id that routes tasks/* back to it, for this principal only.
        const taskId = done.result['taskId'];
        if (typeof taskId !== 'string' || taskId.length === 0)
          throw new ProtocolError(WireCode.InternalError, 'The backend answered with a task without a taskId');
        return relayedTaskResult(done.result, deps.tasks.remote.wrap(backend, taskId, ctx.principal), deps.stamp);
      }
    }
  }

  /**
   * Makes the call a task: from now on it is read through `tasks/get`, not through rounds. Undefined
   * when the principal's task quota is full.
   */
  async function promote(
    call: Call,
    book: Book,
    principal: string,
    ttlMs: number | undefined,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    let task;
    try {
      const spec = starts.get(call);
      const resume = spec
        ? (inputResponses: InputResponseMap, requestState: string | undefined) => engine.start({ ...spec, inputResponses, requestState })
        : undefined;
      task = await deps.tasks.registry.create(call, principal, { ttlMs, resume });
    } catch (e) {
      if (e instanceof GatewayError && e.code === 'task_limit') return undefined;
      throw e;
    }
    // The client went away while the task was being made: nobody will ever know its id.
    if (signal.aborted) {
      deps.tasks.registry.cancel(task);
      throw new GatewayError('cancelled', 'the client went away');
    }
    // A task is not a parked call: what earlier input rounds held goes back.
    if (book.quota) {
      const held = book.quota;
      book.quota = undefined;
      await deps.quotas.release(held);
    }
    return createTaskResult(deps.tasks.registry.snapshot(task), deps.stamp);
  }

  async function resume(
    payload: { call: string; instance: string; round: number },
    responses: InputResponseMap | undefined,
    req: FrontRequest,
    ctx: RequestContext,
    stateCtx: StateCtx,
    opts: RoundOptions,
  ): Promise<Record<string, unknown>> {
    if (payload.instance !== engine.instanceId) {
      const owner = await engine.ownerOf(payload.call);
      throw requestStateError(owner !== undefined && owner !== engine.instanceId ? 'instance' : 'gone');
    }
    const call = engine.get(payload.call);
    if (!call || call.done || call.principal !== ctx.principal) {
      // A backend that finished while its call waited for this retry (it went on without the answers):
      // the retry of that round gets what it finished with.
      const ended = endedWhileParked.get(payload.call);
      if (ended?.outcome && ended.principal === ctx.principal && ended.round === payload.round) {
        endedWhileParked.delete(payload.call); // answered once: a result is not kept for longer than needed
        return answerEnd(ended.backend, ended.outcome, req, ctx, stateCtx);
      }
      // The backend gave up on its own request (its timeout, not ours): say so, not only that the call is gone.
      if (ended?.expired && ended.principal === ctx.principal) throw new GatewayError('backend_request_expired', ended.backend);
      throw requestStateError('gone', ended?.why);
    }
    const book = bookOf(call);
    if (book.round !== payload.round) throw requestStateError('stale');
    const checked = call.checkAnswers(responses);
    if (!checked.ok) throw invalidParams(checked.error);
    if (!(await deps.claims.claim(call.id, payload.round))) throw requestStateError('stale');
    book.expiry?.cancel();
    book.expiry = undefined;
    book.parked = false;
    call.setCapabilities(inputCapabilitiesOf(req.capabilities));
    call.answer(responses);
    return answerRound(call, req, ctx, stateCtx, opts);
  }

  return async (req, ctx, opts = {}) => {
    const field = NAME_FIELD[req.method]!;
    // The requestState is bound to every param of the request but the round fields and `_meta`, so a
    // retry that changes, adds or drops anything (an argument, a `task` hint, an unknown field) is a
    // different request: `request_state_request`, and the parked call is left for the true retry.
    const { inputResponses, requestState, _meta, ...bound } = req.params;
    // `task` is the 2025-11-25 task hint: tolerated and ignored (tasks are the extension's now), never forwarded.
    const { task: _legacyTaskHint, ...salient } = bound;
    const name = salient[field];
    if (typeof name !== 'string' || name.length === 0) throw invalidParams(`params.${field} must be a non-empty string`);
    const parsed = parseInputResponses(inputResponses);
    if (!parsed.ok) throw invalidParams(parsed.error);
    if (requestState === undefined && deps.draining()) throw new GatewayError('gateway_draining');
    const digest = await digestOf({ method: req.method, params: bound }).catch((e: unknown) => {
      throw e instanceof TooDeepError ? invalidParams(`Invalid params: ${e.message}`) : e;
    });
    // Resolved on every round: the Mcp-Param-* headers (SEP-2243) are checked against the tool's schema each time.
    const caps = inputCapabilitiesOf(req.capabilities);
    const route = await resolveRoute(deps.catalog, req.method, name, caps);
    const parkMs = Math.min(options.parkTtlMs, route.backend.parkTimeoutMs ?? Infinity);
    let promoteAfterMs: number | undefined;
    if (req.method === 'tools/call') {
      const tool = route.backend.cachedList('tools', caps)?.find((t) => t['name'] === route.name);
      checkParamHeaders(tool?.['inputSchema'], req.params['arguments'], req.paramHeaders);
      const policy = taskPolicyFor(deps.tasks.policy, route.backend, route.name, tool);
      // The draft dialect's explicit `task` hint counts as asking for a task.
      const wantsTasks = declaresTasks(req.capabilities) || opts.promoteAfterMs !== undefined;
      if (policy.support === 'required' && !wantsTasks) {
        throw new ProtocolError(
          WireCode.MissingRequiredClientCapability,
          `Missing required client capability: ${name} runs as a task, which needs the extension ${TASKS_EXTENSION}`,
          { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        );
      }
      if (wantsTasks && policy.support !== 'forbidden') promoteAfterMs = policy.promoteAfterMs;
      if (opts.promoteAfterMs !== undefined && policy.support !== 'forbidden') promoteAfterMs = opts.promoteAfterMs;
    }
    const stateCtx: StateCtx = { principal: ctx.principal, method: req.method, digest, name, parkMs, promoteAfterMs, taskTtlMs: opts.taskTtlMs };
    let upstreamState: string | undefined;
    if (requestState !== undefined) {
      const opened = await deps.codec.open(requestState, stateCtx);
      if (!opened.ok) throw requestStateError(opened.error);
      const { upstream } = opened.value;
      if (upstream === undefined) return resume(opened.value, parsed.value, req, ctx, stateCtx, opts);
      // A 2026-07-28 backend's round: stateless, any instance may carry it on, but only to that backend.
      if (upstream.backend !== route.backend.name) throw requestStateError('request');
      upstreamState = upstream.state || undefined;
    }
    const spec: StartCall = {
      principal: ctx.principal,
      scope: ctx.scope,
      method: req.method,
      backend: route.backend,
      params: { ...salient, [field]: route.name },
      caps,
      capabilities: req.capabilities,
      logLevel: req.logLevel,
      inputResponses: parsed.value,
      requestState: upstreamState,
    };
    const call = await engine.start({ ...spec, connection: ctx.connection });
    starts.set(call, spec);
    return answerRound(call, req, ctx, stateCtx, opts);
  };
}

/** A call that ended while it waited for a retry: why, and how it ended when it finished on its own. */
interface EndedCall {
  readonly principal: string;
  readonly backend: string;
  readonly round: number;
  readonly why: string | undefined;
  /** The backend withdrew a request of this round (its own timeout) or failed because one timed out. */
  readonly expired: boolean;
  /** Set when the backend finished (it went on without the answers): the retry gets this answer. */
  readonly outcome: CallOutcome | undefined;
}

/**
 * Calls that ended while waiting for a retry, kept for as long as their requestState lives (at most
 * `max` of them; the oldest go first), so the retry is told what happened rather than only that the
 * call is gone, or gets the backend's answer when it finished on its own.
 */
function createEndedCalls(
  clock: Clock,
  max: number,
): { add(call: Call, round: number, ttlMs: number): void; get(id: string): EndedCall | undefined; delete(id: string): void } {
  const ended = new Map<string, EndedCall>();
  return {
    add(call, round, ttlMs) {
      const outcome = call.outcome;
      const finished = outcome?.kind === 'done' ? outcome : undefined;
      let why: string | undefined;
      const expired =
        call.withdrawn > 0 || (outcome?.kind === 'error' && outcome.error instanceof GatewayError && outcome.error.code === 'backend_request_expired');
      if (call.withdrawn > 0) {
        why = 'the backend stopped waiting for the answer (servers built on the v1 SDK give up on an elicitation or sampling request after 60 s by default)';
      } else if (outcome?.kind === 'error' && !(outcome.error instanceof GatewayError && outcome.error.code === 'cancelled')) {
        why = `the backend call ended while it waited: ${toWireError(outcome.error).message}`;
      }
      if (!why && !finished) return;
      ended.set(call.id, { principal: call.principal, backend: call.backend, round, why, expired, outcome: finished });
      if (ended.size > max) ended.delete(ended.keys().next().value!);
      clock.schedule(() => ended.delete(call.id), ttlMs);
    },
    get: (id) => ended.get(id),
    delete: (id) => void ended.delete(id),
  };
}

interface StateCtx {
  readonly principal: string;
  readonly method: string;
  readonly digest: string;
  /** The exposed name or URI (for error messages; not sealed). */
  readonly name: string;
  /** How long a parked call of this backend waits for its retry (never longer than the state lives). */
  readonly parkMs: number;
  /** Set when this request may turn its call into a task: after how long without an end or input. */
  readonly promoteAfterMs?: number | undefined;
  readonly taskTtlMs?: number | undefined;
}

/** Backend errors as 2026-07-28 wants them: no -32002 (now -32602 with `data.uri`). */
function mapBackendError(method: string, name: string, error: unknown): unknown {
  if (method !== 'resources/read') return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== -32002 && code !== WireCode.InvalidParams) return error;
  const message = bareMessage(String((error as { message?: unknown }).message ?? 'Resource not found'));
  const data = (error as { data?: unknown }).data;
  const merged = data && typeof data === 'object' ? { uri: name, ...(data as object) } : { uri: name };
  return new ProtocolError(WireCode.InvalidParams, message, merged);
}
