/** How the gateway names itself: to clients (serverInfo) and to backends (clientInfo). */
import { VERSION } from '../version.js';

export const SERVER_INFO = { name: 'mcp-mrtr-gateway', version: VERSION } as const;
