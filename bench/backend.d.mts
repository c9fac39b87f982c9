/** Types of bench/backend.mjs (plain JavaScript, so stdio backends start without a TypeScript loader). */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

/** A new server with the bench's two tools, `echo` and `ask`. */
export declare function build(): McpServer;
