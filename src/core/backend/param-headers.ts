/**
 * SEP-2243 custom headers, the client's side (transports/streamable-http.mdx "Custom headers from tool
 * parameters"): the gateway calling a 2026-07-28 backend mirrors each tool argument whose schema carries
 * `x-mcp-header: <Name>` into `Mcp-Param-<Name>`, as any client must (the server checks them:
 * protocol/rev-2026-07-28/param-headers.ts). The SDK client does this in `callTool` only; the gateway
 * sends `tools/call` as a plain request.
 */

/** An HTTP header name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A header value as it may travel: as is when it is plain visible ASCII, else `=?base64?…?=` of its UTF-8. */
function headerValue(text: string): string {
  if (/^[\x21-\x7E](?:[\x20-\x7E]*[\x21-\x7E])?$/.test(text) && !text.startsWith('=?')) return text;
  let bin = '';
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return `=?base64?${btoa(bin)}?=`;
}

/**
 * The `Mcp-Param-*` headers a client sends for `args` under `inputSchema`: each `x-mcp-header`
 * property with a string, number or boolean value (what `checkParamHeaders` accepts of it).
 */
export function paramHeadersFor(inputSchema: unknown, args: unknown): Record<string, string> {
  const properties = (inputSchema as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties;
  const out: Record<string, string> = {};
  if (!properties || typeof properties !== 'object' || !args || typeof args !== 'object') return out;
  for (const [param, schema] of Object.entries(properties)) {
    const headerName = schema?.['x-mcp-header'];
    const value = (args as Record<string, unknown>)[param];
    // The name comes from the backend's schema: one that is no HTTP token would make the request fail.
    if (typeof headerName !== 'string' || !TOKEN.test(headerName)) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[`Mcp-Param-${headerName}`] = headerValue(String(value));
  }
  return out;
}
