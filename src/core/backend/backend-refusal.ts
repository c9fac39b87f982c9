/**
 * How the gateway answers a legacy backend's own request with an error (an elicitation its call's
 * client refused, a request that belongs to no call): a JSON-RPC error the backend's SDK reads.
 */
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { bareMessage } from '../../errors.js';
import { BackendRequestRefused } from './port.js';

/**
 * An error answer to a backend's request. The SDK sends a thrown error's `message` as it is, and the
 * backend's SDK (v1) prefixes what it receives with "MCP error <code>: ": so the message must be bare
 * (an `McpError` would carry its own prefix there, and the backend would show two).
 */
export function backendError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code }, data !== undefined ? { data } : {});
}

/** A call's refusal as the backend gets it. */
export function toBackendError(e: unknown): Error {
  if (e instanceof BackendRequestRefused) return backendError(e.code, bareMessage(e.message), e.data);
  return backendError(ErrorCode.InternalError, 'The client request ended before the input arrived');
}
