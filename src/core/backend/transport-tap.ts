/**
 * A tap on a connected legacy transport, in front of the v1 SDK's own handlers: what the tap takes off
 * (a response to one of the session's requests, a backend's request for input) never reaches the SDK;
 * everything else goes on to the handler that was there. On close, the handlers that were there run
 * first (the session learns it lost its transport), then the tap's own `closed`, even when one of them
 * throws (the SDK had aborted its own handlers before running them). Used by request-lane.ts and
 * backend-requests.ts.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface TransportTap {
  /** True when the message was the tap's (handled here); false passes it on. */
  take(message: JSONRPCMessage): boolean;
  /** Before the handlers that were there run on close. */
  closing?(): void;
  /** After them. */
  closed(): void;
}

export function tapTransport(transport: Transport, tap: TransportTap): void {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (!tap.take(message)) deliver?.(message, extra);
  };
  const previous = transport.onclose;
  transport.onclose = () => {
    tap.closing?.();
    try {
      previous?.();
    } finally {
      tap.closed();
    }
  };
}
