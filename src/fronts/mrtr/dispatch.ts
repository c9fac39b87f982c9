/**
 * The stateless 2026-07-28 requests: one admitted request in, one result (or thrown wire error) out.
 * Lists are aggregated across backends (core/catalog.ts), each as its caller can use it (a tool that
 * needs a task is listed only to a caller that takes one: tasks/policy.ts); tools/call, prompts/get and resources/read
 * go through MRTR rounds (rounds.ts); `server/discover` describes the union of the backends.
 */
import type { CatalogKind } from '../../core/backend/port.js';
import { inputCapabilitiesOf } from '../../core/input-capabilities.js';
import type { Catalog, ItemView } from '../../core/catalog.js';
import { shows, type CallerAccess, type PolicyKind } from '../../core/access-policy.js';
import { GatewayError, ProtocolError, WireCode, forbiddenError, invalidParams } from '../../errors.js';
import type { FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import { SUPPORTED_VERSIONS } from '../../protocol/rev-2026-07-28/envelope.js';
import { checkRequestParams } from '../../protocol/rev-2026-07-28/request-schemas.js';
import { completeResult, type ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import { declaresTasks } from '../../protocol/rev-2026-07-28/tasks.js';
import type { RequestContext } from '../dialect.js';
import { gatewayCapabilities } from './server-capabilities.js';
import { TASK_METHODS, createTaskMethods } from '../tasks/methods.js';
import { toolForCaller } from '../tasks/policy.js';
import type { ParkedCall } from './parking.js';
import { createRounds, type RoundOptions, type RoundsDeps } from './rounds.js';

export interface DispatchDeps extends RoundsDeps {
  readonly catalog: Catalog;
  readonly stamp: ResultStamp;
  readonly instructions?: string | undefined;
}

export type RequestHandler = (req: FrontRequest, ctx: RequestContext, opts?: RoundOptions) => Promise<Record<string, unknown>>;

/** The handler, and the calls its rounds hold parked. */
export type Dispatch = RequestHandler & { readonly parked: () => ParkedCall[] };

const LISTS: Record<string, { kind: CatalogKind; field: string; capability: 'tools' | 'prompts' | 'resources' }> = {
  'tools/list': { kind: 'tools', field: 'tools', capability: 'tools' },
  'prompts/list': { kind: 'prompts', field: 'prompts', capability: 'prompts' },
  'resources/list': { kind: 'resources', field: 'resources', capability: 'resources' },
  'resources/templates/list': { kind: 'resourceTemplates', field: 'resourceTemplates', capability: 'resources' },
};

/** The methods this front serves (an own-property lookup: `constructor` or `__proto__` are not methods). */
const HANDLED: Record<string, true> = {
  'server/discover': true,
  'tools/list': true,
  'prompts/list': true,
  'resources/list': true,
  'resources/templates/list': true,
  'tools/call': true,
  'prompts/get': true,
  'resources/read': true,
  'completion/complete': true,
  ...TASK_METHODS,
};

function methodNotFound(method: string): ProtocolError {
  return new ProtocolError(WireCode.MethodNotFound, `Method not found: ${method}`);
}

/** Builds the request handler of the 2026-07-28 front. */
export function createDispatch(deps: DispatchDeps): Dispatch {
  const rounds = createRounds(deps);
  const tasks = createTaskMethods({
    registry: deps.tasks.registry,
    stamp: deps.stamp,
    remote: deps.tasks.remote,
    elsewhere: deps.tasks.elsewhere,
    backend: (name) => deps.catalog.backends.find((b) => b.name === name),
  });

  const capabilities = () => gatewayCapabilities(deps.catalog);

  const dispatch: RequestHandler = async (req, ctx, opts) => {
    if (!Object.hasOwn(HANDLED, req.method)) throw methodNotFound(req.method);
    // Tasks are continuations of calls this instance holds: they go on while it drains.
    if (Object.hasOwn(TASK_METHODS, req.method)) return tasks(req, ctx);
    checkRequestParams(req.method, req.params);
    // Draining: only continuations (a retry with requestState) go on; new work goes elsewhere. A call's
    // round is judged once its tool is known (rounds.ts: a proxy tool may carry work on).
    if (deps.stopping() && req.params['requestState'] === undefined && req.method !== 'tools/call') throw new GatewayError('gateway_draining');
    switch (req.method) {
      case 'server/discover': {
        const result: Record<string, unknown> = { supportedVersions: [...SUPPORTED_VERSIONS], capabilities: await capabilities() };
        if (deps.instructions !== undefined) result['instructions'] = deps.instructions;
        return completeResult(result, deps.stamp, true);
      }
      case 'tools/list':
      case 'prompts/list':
      case 'resources/list':
      case 'resources/templates/list': {
        const spec = LISTS[req.method]!;
        const paged = req.params['cursor'] !== undefined;
        // What the caller cannot call is not listed to it (a tool that needs a task, to a caller that takes none).
        const takesTasks = declaresTasks(req.capabilities) || opts?.takesTasks === true;
        const taskView: ItemView | undefined =
          spec.kind === 'tools' ? (backend, tool) => toolForCaller(deps.tasks.policy, backend, tool, takesTasks) : undefined;
        const view = withPolicy(taskView, deps.access?.for(ctx), spec.kind);
        // The lists and the capabilities side by side: a backend still starting is waited for once, within
        // `listTimeoutMs` (each waits for its connect; one after the other they took twice that).
        const listing = paged ? undefined : deps.catalog.list(spec.kind, inputCapabilitiesOf(req.capabilities), view);
        listing?.catch(() => undefined); // awaited below, unless the capabilities refuse first
        const caps = await capabilities();
        if (!caps[spec.capability]) {
          // A backend that is away may be the one that lists them: not "method not found".
          const away = deps.catalog.backends.filter((b) => !b.up).map((b) => b.name);
          if (away.length) throw new GatewayError('backend_unavailable', away.join(', '));
          throw methodNotFound(req.method);
        }
        if (!listing) throw invalidParams('Invalid cursor: this gateway returns complete lists in one page');
        return completeResult({ [spec.field]: await listing }, deps.stamp, true);
      }
      case 'tools/call':
        return rounds(req, ctx, opts);
      case 'prompts/get':
      case 'resources/read':
        // Never tasks: only the parked-round hook applies.
        return rounds(req, ctx, opts?.parked ? { parked: opts.parked } : undefined);
      case 'completion/complete':
        return completeResult(await complete(deps, req, ctx), deps.stamp);
      default:
        throw methodNotFound(req.method);
    }
  };
  return Object.assign(dispatch, { parked: rounds.parked });
}

/** `view`, and then what the caller's access allows (what it may not use is not listed to it). */
function withPolicy(view: ItemView | undefined, access: CallerAccess | undefined, kind: CatalogKind): ItemView | undefined {
  if (!access) return view;
  const policyKind = kind as PolicyKind;
  return (backend, listed) => {
    const item = view ? view(backend, listed) : listed;
    return item && shows(access, policyKind, backend.name, item) ? item : undefined;
  };
}

async function complete(deps: DispatchDeps, req: FrontRequest, ctx: RequestContext): Promise<Record<string, unknown>> {
  const { signal } = ctx;
  const access = deps.access?.for(ctx);
  const { _meta, ...params } = req.params;
  const ref = params['ref'] as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
  if (!ref || typeof ref !== 'object') throw invalidParams('params.ref is required');
  if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
    const route = await deps.catalog.resolve('prompts', ref.name, inputCapabilitiesOf(req.capabilities));
    if (!route) throw invalidParams(`Unknown prompt: ${ref.name}`);
    if (access && !access.allows('prompts', route.backend.name, route.name)) throw forbiddenError('prompt', route.name, route.backend.name);
    return route.backend.request('completion/complete', { ...params, ref: { ...ref, name: route.name } }, signal);
  }
  if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
    const route = await deps.catalog.resolveTemplate(ref.uri, inputCapabilitiesOf(req.capabilities));
    if (!route) throw invalidParams(`Unknown resource template: ${ref.uri}`);
    if (access && !access.allows('resourceTemplates', route.backend.name, route.name)) throw forbiddenError('resource', route.name, route.backend.name);
    return route.backend.request('completion/complete', params, signal);
  }
  throw invalidParams('params.ref must be a ref/prompt with a name or a ref/resource with a uri');
}
