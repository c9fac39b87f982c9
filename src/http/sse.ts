/** Server-Sent Events framing shared by the exchange and listen streams. */
const encoder = new TextEncoder();

export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' } as const;
export const KEEPALIVE_MS = 15_000;

/** One `message` event carrying a JSON-RPC message. */
export function sseEvent(message: unknown): Uint8Array {
  return encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

/** A comment line that keeps proxies from timing the stream out. */
export const SSE_KEEPALIVE = encoder.encode(': keep-alive\n\n');
