/**
 * Exact correlation of backend requests over streamable HTTP (`../shared/spec/sdk.md` §4.2).
 *
 * A 2025-11-25 server sends the elicitation/sampling/roots requests and the notifications that belong
 * to a call on that call's POST response stream, but the SDK client does not tell its handlers which
 * stream a message came on. The backend leg (streamable-http-leg.ts) does: the gateway puts its call
 * id in the outgoing request's `params._meta[CALL_ID_META]`; the leg removes it before the request
 * leaves, and tags every request and notification read from that POST's response with
 * `_meta[RELATED_CALL_META]`. Messages on the standalone GET stream carry no tag (they belong to no
 * call), and a tag the backend wrote itself is removed: only the gateway says which call a message
 * belongs to.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { copyWith } from '../../util/copy-with.js';

/** Set by the gateway on outgoing requests; never reaches the backend. */
export const CALL_ID_META = 'io.github.mcp-mrtr-gateway/callId';
/** Set on incoming backend messages that arrived on a call's response stream. */
export const RELATED_CALL_META = 'io.github.mcp-mrtr-gateway/relatedCallId';

type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };

/** `message` without the gateway's call id (a copy when it had one), and that call id. */
export function takeCallId(message: JSONRPCMessage): { message: JSONRPCMessage; callId: string | undefined } {
  if (!('method' in message)) return { message, callId: undefined };
  const params = message.params as Params | undefined;
  const id = params?._meta?.[CALL_ID_META];
  if (typeof id !== 'string' || !params?._meta) return { message, callId: undefined };
  const { [CALL_ID_META]: _id, ...meta } = params._meta;
  const { _meta: _old, ...rest } = params;
  const out = { ...message, params: Object.keys(meta).length ? { ...rest, _meta: meta } : rest };
  return { message: out as JSONRPCMessage, callId: id };
}

/**
 * Tags a request or notification the backend sent with `callId` (the call whose response stream it
 * came on); with no call id, removes any tag the backend put there itself. Responses are left as they are.
 */
export function tagMessage(message: JSONRPCMessage, callId: string | undefined): JSONRPCMessage {
  if (!('method' in message)) return message;
  const params = message.params as Params | undefined;
  if (callId === undefined) {
    if (params?._meta && RELATED_CALL_META in params._meta) delete params._meta[RELATED_CALL_META];
    return message;
  }
  // Not a spread: every kind of backend message comes here, and a parked call's elicitation request
  // holds the copy (copy-with.ts, issue 30).
  const tagged: Params = copyWith(params, { _meta: copyWith(params?._meta, { [RELATED_CALL_META]: callId }) });
  return copyWith(message, { params: tagged }) as unknown as JSONRPCMessage;
}
