/**
 * Legacy session ids name the instance that holds the session: `<instanceId>~<uuid>`, for the
 * 2025-era streamable HTTP sessions (`Mcp-Session-Id`) and the 2024-11-05 SSE sessions
 * (`/messages?sessionId=`) alike. Behind a round-robin balancer, a request for a session that lands on
 * another instance is forwarded to its holder (spec/notes/cluster.md, "Forwarding"). Instance ids are
 * `[A-Za-z0-9_.-]`, so the id stays visible ASCII and needs no escaping in a header or a URL query.
 */
import { randomUUID } from 'node:crypto';
import { heldId, holderOfId } from '../../cluster/instance-id.js';

/** A new session id held by `instanceId` (made as task ids are). */
export function newSessionId(instanceId: string): string {
  return heldId(instanceId, randomUUID());
}

/** The instance a session id names, or undefined for an id that names none. */
export const instanceOfSessionId = holderOfId;

export interface SessionRoutingDeps {
  readonly instanceId: string;
  /** True while an instance's heartbeat is current. */
  readonly alive: (instanceId: string) => Promise<boolean>;
  /** True once this instance drains: a new session opens on another instance. */
  readonly draining: () => boolean;
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
      return deps.draining() ? deps.anyServing() : undefined;
    }
    const instance = instanceOfSessionId(sessionId);
    if (instance === undefined || instance === deps.instanceId) return undefined;
    return (await deps.alive(instance)) ? instance : undefined;
  };
}
