/**
 * Tasks a 2026-07-28 backend created itself (it answered a call with `resultType: "task"`). The gateway
 * holds nothing for them: their id is wrapped into a sealed one (compact JWE under the requestState
 * keys) that names the backend, the backend's own task id and the principal, so any instance can
 * route `tasks/*` back to that backend, and no other principal can use it (the backend sees one
 * client, the gateway, so it cannot tell principals apart itself). Wrapped ids start with `r~`. The
 * JWE is the runtime's (node:crypto on Node, Web Crypto at the edge): the same ids either way.
 */
import type { AsyncCompactJwe } from '../../protocol/jwe-header.js';

const PREFIX = 'r~';

export interface RemoteTaskIds {
  /** The id a client sees for `backend`'s task `taskId`, usable by `principal` only. */
  wrap(backend: string, taskId: string, principal: string): Promise<string>;
  /** The backend and its task id, when `id` is a wrapped id of `principal`'s; undefined otherwise. */
  unwrap(id: string, principal: string): Promise<{ backend: string; taskId: string } | undefined>;
  /** True when `id` looks like a wrapped id (whoever it belongs to). */
  isRemote(id: string): boolean;
}

export function createRemoteTaskIds(jwe: AsyncCompactJwe): RemoteTaskIds {
  return {
    wrap: async (backend, taskId, principal) => `${PREFIX}${await jwe.seal({ b: backend, t: taskId, p: principal })}`,
    async unwrap(id, principal) {
      if (!id.startsWith(PREFIX) || id.length > 4_096) return undefined;
      const read = await jwe.read(id.slice(PREFIX.length));
      if (!read.ok) return undefined;
      const claims = read.value;
      if (claims['p'] !== principal || typeof claims['b'] !== 'string' || typeof claims['t'] !== 'string') return undefined;
      return { backend: claims['b'], taskId: claims['t'] };
    },
    isRemote: (id) => id.startsWith(PREFIX),
  };
}
