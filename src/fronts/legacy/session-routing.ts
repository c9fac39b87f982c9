/**
 * Which instance serves a legacy session's request (several instances behind one balancer): the one
 * whose id the session id names (`<instanceId>~<uuid>`, ./session-ids.ts) while it lives; a session
 * being opened goes to an instance that takes new work when this one drains. The HTTP layer forwards
 * the request there and streams the answer back (spec/notes/cluster.md, "Forwarding"). The twin of
 * `fronts/retry-routing.ts`, which does the same for MRTR retries and tasks.
 */
import { instanceOfSessionId } from './session-ids.js';

export interface SessionRoutingDeps {
  readonly instanceId: string;
  /** True until an instance is known gone (its heartbeat current, or only lapsed). */
  readonly alive: (instanceId: string) => Promise<boolean>;
  /** True once this instance drains or closed (it takes no new work): a new session opens on another instance. */
  readonly stopping: () => boolean;
  /** One of the other instances that take new work, if there is one. */
  readonly anyServing: () => Promise<string | undefined>;
}

/**
 * Which other live instance holds a session: undefined for this instance's sessions, for ids that name
 * no instance, and for an instance that is gone (served here, where the client is told
 * `Session not found` and opens a new session). Without an id (a session being opened): while this
 * instance drains, one that takes new work; else undefined (it opens here).
 */
export function createSessionRouting(deps: SessionRoutingDeps): (sessionId: string | undefined) => Promise<string | undefined> {
  return async (sessionId) => {
    if (sessionId === undefined) {
      return deps.stopping() ? deps.anyServing() : undefined;
    }
    const instance = instanceOfSessionId(sessionId);
    if (instance === undefined || instance === deps.instanceId) return undefined;
    return (await deps.alive(instance)) ? instance : undefined;
  };
}
