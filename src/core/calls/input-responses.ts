/**
 * Validation of a retry's `inputResponses` (2026-07-28 schema.ts `InputResponses`): the map must be an
 * object of objects; a response to a key the gateway asked for must match the result schema of the
 * request's method (SDK v2 core schemas). Keys the gateway did not ask for are ignored (mrtr.mdx).
 */
import { CreateMessageResultSchema, CreateMessageResultWithToolsSchema, ElicitResultSchema, ListRootsResultSchema } from '@modelcontextprotocol/core';
import { type Result, ok, err } from '../../util/result.js';

export type InputResponseMap = Readonly<Record<string, Record<string, unknown>>>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Checks the outer shape of `inputResponses` (absent is fine). */
export function parseInputResponses(value: unknown): Result<InputResponseMap | undefined, string> {
  if (value === undefined) return ok(undefined);
  if (!isPlainObject(value)) return err('inputResponses must be an object keyed by input request key');
  for (const [key, v] of Object.entries(value)) {
    if (!isPlainObject(v)) return err(`inputResponses.${key} must be an object`);
  }
  return ok(value as InputResponseMap);
}

/** Checks one response against the result schema of the method it answers. */
export function checkResponseFor(method: string, params: Record<string, unknown>, response: unknown): boolean {
  switch (method) {
    case 'elicitation/create':
      return ElicitResultSchema.safeParse(response).success;
    case 'sampling/createMessage':
      return (params['tools'] !== undefined ? CreateMessageResultWithToolsSchema : CreateMessageResultSchema).safeParse(response).success;
    case 'roots/list':
      return ListRootsResultSchema.safeParse(response).success;
    default:
      return false;
  }
}
