/**
 * Newline-delimited JSON-RPC as a stdio backend writes it: the SDK's framing (`ReadBuffer`: a line
 * per message, `\r\n` allowed, at most STDIO_DEFAULT_MAX_BUFFER_SIZE bytes waiting for a newline) and
 * its `deserializeMessage`, but with the commonest message read without zod: a plain result
 * response (`jsonrpc`, `id`, `result` and nothing else; a result with no `_meta`, which the SDK's
 * schema rewrites where it is odd, and no own `__proto__`). Every other line goes to the SDK, whose verdict stands; the hand
 * check accepts only what its schema accepts (test/core/backend/json-rpc-lines.test.ts holds the two
 * to the same answers). A pass-through call's answer is such a line: one zod parse less per call (issue 30).
 */
import { deserializeMessage, STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const NEWLINE = 0x0a;
const RESULT_KEYS = new Set(['jsonrpc', 'id', 'result']);

/** The lines of a byte stream, as the SDK's `ReadBuffer` frames them. */
export class LineBuffer {
  #buffer: Buffer | undefined;

  /** Adds bytes; throws (and forgets what it held) past the SDK's limit with no newline. */
  append(chunk: Buffer): void {
    const size = (this.#buffer?.length ?? 0) + chunk.length;
    if (size > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      this.#buffer = undefined;
      throw new Error(`ReadBuffer exceeded maximum size of ${STDIO_DEFAULT_MAX_BUFFER_SIZE} bytes`);
    }
    this.#buffer = this.#buffer ? Buffer.concat([this.#buffer, chunk]) : chunk;
  }

  /** The next whole line (without its `\r\n` or `\n`), or null. */
  nextLine(): string | null {
    const index = this.#buffer?.indexOf(NEWLINE) ?? -1;
    if (index < 0) return null;
    const line = this.#buffer!.toString('utf8', 0, index).replace(/\r$/, '');
    this.#buffer = this.#buffer!.subarray(index + 1);
    return line;
  }

  clear(): void {
    this.#buffer = undefined;
  }
}

/** One line as a JSON-RPC message; throws as the SDK's `deserializeMessage` does for what is not one. */
export function parseMessage(line: string): JSONRPCMessage {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return deserializeMessage(line); // throws the SDK's own error
  }
  if (!isPlainResult(value)) return JSONRPCMessageSchema.parse(value);
  const { id, result } = value as { id: string | number; result: Record<string, unknown> };
  return { jsonrpc: '2.0', id, result }; // in the schema's key order, as the SDK gives it
}

function isPlainResult(value: unknown): boolean {
  if (!isPlainObject(value) || value['jsonrpc'] !== '2.0') return false;
  for (const key in value) if (!RESULT_KEYS.has(key)) return false;
  const id = value['id'];
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return false;
  const result = value['result'];
  // The schema copies the result: an own `__proto__` key would become the copy's prototype there.
  return isPlainObject(result) && !Object.hasOwn(result, '_meta') && !Object.hasOwn(result, '__proto__');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
