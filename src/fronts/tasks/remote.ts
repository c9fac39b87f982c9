/**
 * Tasks a 2026-07-28 backend created itself (it answered a call with `resultType: "task"`). The gateway
 * holds nothing for them: their id is wrapped into a sealed one (compact JWE under the requestState
 * keys) that names the backend, the backend's own task id and the principal, so any instance can
 * route `tasks/*` back to that backend, and no other principal can use it (the backend sees one
 * client, the gateway, so it cannot tell principals apart itself). Wrapped ids start with `r~`.
 */
import { createCompactJwe, type JweKey } from '../../protocol/compact-jwe.js';

const PREFIX = 'r~';

export interface RemoteTaskIds {
  /** The id a client sees for `backend`'s task `taskId`, usable by `principal` only. */
  wrap(backend: string, taskId: string, principal: string): string;
  /** The backend and its task id, when `id` is a wrapped id of `principal`'s; undefined otherwise. */
  unwrap(id: string, principal: string): { backend: string; taskId: string } | undefined;
  /** True when `id` looks like a wrapped id (whoever it belongs to). */
  isRemote(id: string): boolean;
}

export function createRemoteTaskIds(keys: readonly JweKey[]): RemoteTaskIds {
  const jwe = createCompactJwe(keys);
  return {
    wrap: (backend, taskId, principal) => `${PREFIX}${jwe.seal({ b: backend, t: taskId, p: principal })}`,
    unwrap(id, principal) {
      if (!id.startsWith(PREFIX) || id.length > 4_096) return undefined;
      const claims = jwe.open(id.slice(PREFIX.length));
      if (!claims || claims['p'] !== principal || typeof claims['b'] !== 'string' || typeof claims['t'] !== 'string') return undefined;
      return { backend: claims['b'], taskId: claims['t'] };
    },
    isRemote: (id) => id.startsWith(PREFIX),
  };
}
