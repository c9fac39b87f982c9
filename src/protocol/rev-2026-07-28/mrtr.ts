/**
 * The MRTR front for tools/call, prompts/get and resources/read (basic/patterns/mrtr.mdx).
 *
 * A fresh request starts a backend call; a retry (same method and params, new id, `inputResponses`,
 * `requestState`) opens and verifies the state, hands the answers to the parked call and waits for its
 * next outcome. State problems are -32602 with a stable message and `data.reason`; a bad retry never
 * disturbs the parked call (everything is checked before the call is touched).
 */
import { ProtocolError, WireCode, invalidParams } from '../../errors.js';
import { inputCapabilitiesOf } from '../../core/capabilities.js';
import type { Catalog, Route } from '../../core/catalog.js';
import { Backend } from '../../core/backend/backend.js';
import { ModernBackend } from '../../core/backend/modern-backend.js';
import type { CallService, ParkedOutcome } from '../../core/calls/call-service.js';
import type { NotificationSink, RoundContext } from '../../core/calls/call-run.js';
import { parseInputResponses } from '../../core/calls/input-responses.js';
import type { ParkedCallStore } from '../../core/calls/parked-call-store.js';
import { digestOf } from '../../util/canonical-json.js';
import type { RequestStateCodec, StateFailure } from '../request-state.js';
import type { FrontRequest } from './envelope.js';
import { checkParamHeaders } from './param-headers.js';
import { completeResult, inputRequiredResult, type ResultStamp } from './results.js';

export interface MrtrDeps {
  readonly catalog: Catalog;
  readonly calls: CallService;
  readonly store: ParkedCallStore;
  readonly codec: RequestStateCodec;
  readonly instanceId: string;
  readonly stamp: ResultStamp;
  /** Hard limit for one backend request. */
  readonly callTimeoutMs: number;
}

export interface CallContext {
  readonly principal: string;
  readonly signal: AbortSignal;
  readonly sink?: NotificationSink | undefined;
}

/** Stable messages for every way a requestState can be refused. */
export const STATE_ERRORS: Record<StateFailure | 'gone' | 'stale' | 'instance', string> = {
  malformed: 'Invalid requestState: it is not a state this gateway issued. Start the request again without requestState.',
  invalid: 'Invalid requestState: it failed verification. Start the request again without requestState.',
  expired: 'Expired requestState: start the request again without requestState.',
  principal: 'Invalid requestState: it was issued to another principal.',
  request: 'Invalid requestState: it was issued for a different request (method or params differ).',
  gone: 'The call this requestState continues no longer exists (it expired, was cancelled, or the gateway restarted). Start the request again without requestState.',
  stale: 'Stale requestState: this round was already answered. Use the requestState of the latest input_required result.',
  instance: 'The call this requestState continues is held by another gateway instance.',
};

function stateError(reason: keyof typeof STATE_ERRORS): ProtocolError {
  return invalidParams(STATE_ERRORS[reason], { reason: `request_state_${reason}` });
}

const NAME_FIELD: Record<string, 'name' | 'uri'> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

async function resolveRoute(catalog: Catalog, method: string, name: string): Promise<Route> {
  const route = method === 'resources/read' ? await catalog.resolveResource(name) : await catalog.resolve(method === 'tools/call' ? 'tools' : 'prompts', name);
  if (route) return route;
  if (method === 'resources/read') throw invalidParams(`Resource not found: ${name}`, { uri: name });
  throw invalidParams(`Unknown ${method === 'tools/call' ? 'tool' : 'prompt'}: ${name}`);
}

export function createMrtrFront(deps: MrtrDeps): (req: FrontRequest, ctx: CallContext) => Promise<Record<string, unknown>> {
  return async (req, ctx) => {
    const field = NAME_FIELD[req.method]!;
    const { inputResponses, requestState, _meta, ...salient } = req.params;
    const name = salient[field];
    if (typeof name !== 'string' || name.length === 0) throw invalidParams(`params.${field} must be a non-empty string`);
    const parsed = parseInputResponses(inputResponses);
    if (!parsed.ok) throw invalidParams(parsed.error);
    const digest = await digestOf({ method: req.method, params: salient });
    const caps = inputCapabilitiesOf(req.capabilities);
    const round: RoundContext = { caps };
    if (req.progressToken !== undefined) round.progressToken = req.progressToken;
    if (req.logLevel !== undefined) round.logLevel = req.logLevel;
    if (ctx.sink) round.sink = ctx.sink;

    const stateCtx = { principal: ctx.principal, method: req.method, digest };
    // Resolved on every round: the Mcp-Param-* headers (SEP-2243) are checked against the tool's schema each time.
    const route = await resolveRoute(deps.catalog, req.method, name);
    if (req.method === 'tools/call') {
      const tool = route.backend.cachedList('tools')?.find((t) => t['name'] === route.name);
      checkParamHeaders(tool?.['inputSchema'], req.params['arguments'], req.paramHeaders);
    }
    let outcome: ParkedOutcome;
    if (requestState !== undefined) {
      const opened = await deps.codec.open(requestState, stateCtx);
      if (!opened.ok) throw stateError(opened.error);
      if (opened.value.upstream !== undefined) {
        // A 2026-07-28 backend's round: stateless, any instance may carry it on.
        if (!(route.backend instanceof ModernBackend)) throw stateError('request');
        const upstream = opened.value.upstream;
        return forwardModern(
          deps,
          req,
          ctx,
          route.backend,
          {
            ...salient,
            [field]: route.name,
            ...(parsed.value ? { inputResponses: parsed.value } : {}),
            ...(upstream ? { requestState: upstream } : {}),
          },
          stateCtx,
        );
      }
      if (opened.value.instance !== deps.instanceId) throw stateError('instance');
      const run = deps.store.get(opened.value.call);
      if (!run || run.done) throw stateError('gone');
      if (run.round !== opened.value.round || run.awaited) throw stateError('stale');
      const checked = run.checkAnswers(parsed.value);
      if (!checked.ok) throw invalidParams(checked.error);
      outcome = await deps.calls.resume(run, round, parsed.value, ctx.signal);
    } else {
      const params: Record<string, unknown> = { ...salient, [field]: route.name };
      if (route.backend instanceof ModernBackend) {
        return forwardModern(deps, req, ctx, route.backend, parsed.value ? { ...params, inputResponses: parsed.value } : params, stateCtx);
      }
      if (!(route.backend instanceof Backend)) throw new Error('unknown backend kind');
      outcome = await deps.calls.begin(
        { route: { backend: route.backend, name: route.name }, method: req.method, params, principal: ctx.principal, caps, round, prefill: parsed.value },
        ctx.signal,
      );
    }

    switch (outcome.kind) {
      case 'input': {
        const token = await deps.codec.seal({ call: outcome.run.id, instance: deps.instanceId, round: outcome.round }, stateCtx);
        return inputRequiredResult(outcome.inputRequests, token, deps.stamp);
      }
      case 'result':
        return completeResult(outcome.result, deps.stamp, req.method === 'resources/read');
      case 'error':
        throw mapBackendError(req.method, name, outcome.error);
    }
  };
}

/**
 * Passes one round through to a 2026-07-28 backend. Its `input_required` goes to the client as is,
 * with the backend's requestState sealed inside ours (bound like any other state).
 */
async function forwardModern(
  deps: MrtrDeps,
  req: FrontRequest,
  ctx: CallContext,
  backend: ModernBackend,
  params: Record<string, unknown>,
  stateCtx: { principal: string; method: string; digest: string },
): Promise<Record<string, unknown>> {
  const { sink } = ctx;
  const token = req.progressToken;
  let result: Record<string, unknown>;
  try {
    result = await backend.forward({
      method: req.method,
      params,
      capabilities: req.capabilities,
      logLevel: req.logLevel,
      timeoutMs: deps.callTimeoutMs,
      signal: ctx.signal,
      onprogress: sink && token !== undefined ? (p) => sink({ method: 'notifications/progress', params: { progressToken: token, ...p } }) : undefined,
    });
  } catch (e) {
    throw mapBackendError(req.method, String(params['name'] ?? params['uri']), e);
  }
  const { resultType, requestState: upstream, inputRequests, ...rest } = result;
  if (resultType === 'input_required') {
    const sealed = await deps.codec.seal({ call: '', instance: deps.instanceId, round: 0, upstream: typeof upstream === 'string' ? upstream : '' }, stateCtx);
    return inputRequiredResult((inputRequests as Record<string, unknown> | undefined) ?? {}, sealed, deps.stamp);
  }
  return completeResult(rest, deps.stamp, req.method === 'resources/read');
}

/** Backend errors as 2026-07-28 wants them: no -32002 (now -32602 with `data.uri`). */
function mapBackendError(method: string, name: string, error: unknown): unknown {
  if (method !== 'resources/read') return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== -32002 && code !== WireCode.InvalidParams) return error;
  const message = String((error as { message?: unknown }).message ?? 'Resource not found').replace(/^MCP error -?\d+: /, '');
  const data = (error as { data?: unknown }).data;
  const merged = data && typeof data === 'object' ? { uri: name, ...(data as object) } : { uri: name };
  return new ProtocolError(WireCode.InvalidParams, message, merged);
}
