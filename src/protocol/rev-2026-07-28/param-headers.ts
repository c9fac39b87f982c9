/**
 * SEP-2243 custom headers (transports/streamable-http.mdx "Custom headers from tool parameters"): a tool
 * argument whose schema carries `x-mcp-header: <Name>` is mirrored by the client into
 * `Mcp-Param-<Name>`. A server that processes the body MUST reject (-32020, HTTP 400) a request whose
 * header is missing while the argument has a value, disagrees with it (after decoding `=?base64?…?=`;
 * numbers compare numerically), or holds invalid characters. The client's side, for the gateway's own
 * requests to a 2026-07-28 backend, is core/backend/param-headers.ts.
 */
import { ProtocolError, WireCode } from '../../errors.js';
import { decodeHeaderValue, type ParamHeaderLookup } from './envelope.js';

function mismatch(message: string): ProtocolError {
  return new ProtocolError(WireCode.HeaderMismatch, `Header mismatch: ${message}`);
}

/**
 * Throws -32020 when the request's `Mcp-Param-*` headers do not mirror `args` as `inputSchema` asks.
 * `headers` looks one up by its name without the prefix, lower-cased (or is a record of them so named).
 */
export function checkParamHeaders(inputSchema: unknown, args: unknown, headers: ParamHeaderLookup | Readonly<Record<string, string>>): void {
  const lookup: ParamHeaderLookup = typeof headers === 'function' ? headers : (name) => (Object.hasOwn(headers, name) ? headers[name] : undefined);
  const properties = (inputSchema as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties;
  if (!properties || typeof properties !== 'object') return;
  const values = args && typeof args === 'object' ? (args as Record<string, unknown>) : {};
  for (const [param, schema] of Object.entries(properties)) {
    const headerName = schema?.['x-mcp-header'];
    if (typeof headerName !== 'string' || headerName.length === 0) continue;
    const value = values[param];
    const raw = lookup(headerName.toLowerCase());
    if (value === undefined || value === null) continue;
    if (raw === undefined) throw mismatch(`Mcp-Param-${headerName} is required when arguments.${param} has a value`);
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) throw mismatch(`Mcp-Param-${headerName} holds invalid characters or invalid Base64`);
    const same =
      typeof value === 'number'
        ? decoded.trim() !== '' && Number(decoded) === value
        : typeof value === 'boolean'
          ? decoded === String(value)
          : decoded === String(value);
    if (!same) throw mismatch(`Mcp-Param-${headerName} does not match arguments.${param}`);
  }
}
