/**
 * The SDK v1 server answers a request that fails its schema with -32602 and the zod issues as
 * pretty-printed JSON ("Invalid tools/call request: [\n  {\n    \"expected\": \"string\", …"), which a
 * legacy client shows its user as is. Said here as one line: each issue's path and message.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const DUMP = /^(Invalid [\w/]+ request): (\[[\s\S]*\])$/;

/** `message`, its -32602 zod dump said as `Invalid tools/call request: params.name: expected string, …`. */
export function readableParamsError(message: JSONRPCMessage): JSONRPCMessage {
  const error = (message as { error?: { code?: unknown; message?: unknown } }).error;
  if (!error || error.code !== -32602 || typeof error.message !== 'string') return message;
  const dump = DUMP.exec(error.message);
  if (!dump) return message;
  let issues: unknown;
  try {
    issues = JSON.parse(dump[2]!);
  } catch {
    return message;
  }
  if (!Array.isArray(issues) || issues.length === 0) return message;
  const said = issues
    .map((issue: { path?: unknown; message?: unknown } | null) => {
      const path = Array.isArray(issue?.path) ? issue.path.join('.') : '';
      return `${path ? `${path}: ` : ''}${typeof issue?.message === 'string' ? issue.message : 'invalid'}`;
    })
    .join('; ');
  return { ...message, error: { ...error, message: `${dump[1]}: ${said}` } } as JSONRPCMessage;
}
