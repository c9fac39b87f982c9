/**
 * Legacy session ids name the instance that holds the session: `<instanceId>~<uuid>`, for the
 * 2025-era streamable HTTP sessions (`Mcp-Session-Id`) and the 2024-11-05 SSE sessions
 * (`/messages?sessionId=`) alike. Behind a round-robin balancer, a request for a session that lands on
 * another instance is forwarded to its owner (./session-routing.ts). Instance ids are
 * `[A-Za-z0-9_.-]`, so the id stays visible ASCII and needs no escaping in a header or a URL query.
 */
import { randomUUID } from 'node:crypto';
import { ownedId, ownerOfId } from '../../cluster/owned-ids.js';

/** A new session id owned by `instanceId` (made as task ids are). */
export function newSessionId(instanceId: string): string {
  return ownedId(instanceId, randomUUID());
}

/** The instance a session id names, or undefined for an id that names none. */
export const instanceOfSessionId = ownerOfId;
