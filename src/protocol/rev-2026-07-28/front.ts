/**
 * The stateless 2026-07-28 front: one admitted request in, one result (or thrown wire error) out.
 * Lists are aggregated across backends (core/catalog.ts); tools/call, prompts/get and resources/read
 * go through MRTR (mrtr.ts); `server/discover` describes the union of the backends.
 */
import { ProtocolError, WireCode, invalidParams } from '../../errors.js';
import type { Catalog } from '../../core/catalog.js';
import type { CatalogKind } from '../../core/backend/catalog-backend.js';
import type { Logger } from '../../log.js';
import type { FrontRequest } from './envelope.js';
import { SUPPORTED_VERSIONS } from './envelope.js';
import { createMrtrFront, type CallContext, type MrtrDeps } from './mrtr.js';
import { completeResult, type ResultStamp } from './results.js';
import { checkRequestParams } from './request-schemas.js';
import { gatewayCapabilities } from './capabilities.js';

export interface FrontDeps extends MrtrDeps {
  readonly catalog: Catalog;
  readonly stamp: ResultStamp;
  readonly instructions?: string | undefined;
  readonly logger: Logger;
}

export type FrontHandler = (req: FrontRequest, ctx: CallContext) => Promise<Record<string, unknown>>;

const LISTS: Record<string, { kind: CatalogKind; field: string; capability: 'tools' | 'prompts' | 'resources' }> = {
  'tools/list': { kind: 'tools', field: 'tools', capability: 'tools' },
  'prompts/list': { kind: 'prompts', field: 'prompts', capability: 'prompts' },
  'resources/list': { kind: 'resources', field: 'resources', capability: 'resources' },
  'resources/templates/list': { kind: 'resourceTemplates', field: 'resourceTemplates', capability: 'resources' },
};

function methodNotFound(method: string): ProtocolError {
  return new ProtocolError(WireCode.MethodNotFound, `Method not found: ${method}`);
}

/** Builds the request handler of the 2026-07-28 front. */
export function createFront(deps: FrontDeps): FrontHandler {
  const mrtr = createMrtrFront(deps);

  const capabilities = () => gatewayCapabilities(deps.catalog);

  return async (req, ctx) => {
    checkRequestParams(req.method, req.params);
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
        const caps = await capabilities();
        if (!caps[spec.capability]) throw methodNotFound(req.method);
        if (req.params['cursor'] !== undefined) throw invalidParams('Invalid cursor: this gateway returns complete lists in one page');
        return completeResult({ [spec.field]: await deps.catalog.list(spec.kind) }, deps.stamp, true);
      }
      case 'tools/call':
      case 'prompts/get':
      case 'resources/read':
        return mrtr(req, ctx);
      case 'completion/complete':
        return completeResult(await complete(deps, req, ctx.signal), deps.stamp);
      default:
        throw methodNotFound(req.method);
    }
  };
}

async function complete(deps: FrontDeps, req: FrontRequest, signal: AbortSignal): Promise<Record<string, unknown>> {
  const { _meta, ...params } = req.params;
  const ref = params['ref'] as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
  if (!ref || typeof ref !== 'object') throw invalidParams('params.ref is required');
  if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
    const route = await deps.catalog.resolve('prompts', ref.name);
    if (!route) throw invalidParams(`Unknown prompt: ${ref.name}`);
    return route.backend.requestOnPrimary('completion/complete', { ...params, ref: { ...ref, name: route.name } }, signal);
  }
  if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
    const route = await deps.catalog.resolveTemplate(ref.uri);
    if (!route) throw invalidParams(`Unknown resource template: ${ref.uri}`);
    return route.backend.requestOnPrimary('completion/complete', params, signal);
  }
  throw invalidParams('params.ref must be a ref/prompt with a name or a ref/resource with a uri');
}
