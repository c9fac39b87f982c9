/**
 * The 2026-07-28 dialect (served on `/mcp`): admission by the revision's envelope rules, requests by
 * the dispatcher (MRTR rounds for the input-capable methods), `subscriptions/listen` streams.
 */
import { GatewayError } from '../../errors.js';
import { admit } from '../../protocol/rev-2026-07-28/envelope.js';
import type { Dialect } from '../dialect.js';
import type { RequestHandler } from './dispatch.js';
import { createListen, type ListenDeps } from './listen.js';

/** `handle` is the request dispatcher (dispatch.ts), shared with the draft dialect so both serve the same calls. */
export function createModernDialect(deps: { handle: RequestHandler; listen: ListenDeps; stopping: () => boolean }): Dialect {
  const listen = createListen(deps.listen);
  const handle = deps.handle;
  return {
    name: '2026-07-28',
    admit,
    handle: (request, ctx) => handle(request, ctx),
    isListen: (request) => request.method === 'subscriptions/listen',
    listen: async (request, ctx) => {
      if (deps.stopping()) throw new GatewayError('gateway_draining');
      return listen(request, ctx);
    },
  };
}
