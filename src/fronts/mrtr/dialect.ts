/**
 * The 2026-07-28 dialect (served on `/mcp`): admission by the revision's envelope rules, requests by
 * the dispatcher (MRTR rounds for the input-capable methods), `subscriptions/listen` streams.
 */
import { GatewayError } from '../../errors.js';
import { admit } from '../../protocol/rev-2026-07-28/envelope.js';
import type { Dialect } from '../dialect.js';
import { createDispatch, type DispatchDeps } from './dispatch.js';
import { createListen, type ListenDeps } from './listen.js';

export function createModernDialect(deps: { dispatch: DispatchDeps; listen: ListenDeps }): Dialect {
  const handle = createDispatch(deps.dispatch);
  const listen = createListen(deps.listen);
  return {
    name: '2026-07-28',
    admit,
    handle,
    isListen: (request) => request.method === 'subscriptions/listen',
    listen: async (request, ctx) => {
      if (deps.dispatch.draining()) throw new GatewayError('gateway_draining');
      return listen(request, ctx);
    },
  };
}
