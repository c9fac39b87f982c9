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

const ELICIT_ACTIONS = new Set(['accept', 'decline', 'cancel']);

/**
 * An elicitation result the SDK's `ElicitResultSchema` accepts, checked by hand: what nearly every
 * answer is, checked on every retry (the schema's zod parse costs tens of µs). Accepts only what the
 * schema accepts; anything it does not accept here is left to the schema, whose verdict stands
 * (test/core/calls/input-responses.test.ts holds the two to the same answers).
 */
function isPlainElicitResult(response: unknown): boolean {
  if (!isPlainObject(response) || typeof response['action'] !== 'string' || !ELICIT_ACTIONS.has(response['action'])) return false;
  const meta = response['_meta'];
  if (meta !== undefined && !isPlainObject(meta)) return false;
  const content = response['content'];
  if (content === undefined || content === null) return true;
  if (!isPlainObject(content)) return false;
  for (const key in content) {
    if (!Object.hasOwn(content, key)) continue;
    const value = content[key];
    const plain =
      typeof value === 'string' ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value)) ||
      (Array.isArray(value) && value.every((v) => typeof v === 'string'));
    if (!plain) return false;
  }
  return true;
}

/** Checks one response against the result schema of the method it answers. */
export function checkResponseFor(method: string, params: Record<string, unknown>, response: unknown): boolean {
  return responseProblem(method, params, response) === undefined;
}

/**
 * What is wrong with one response to a request of `method`, or undefined: the method's result schema,
 * and for an accepted form elicitation, the content against the `requestedSchema` the backend sent (a
 * backend gets no answer it would reject; the client can still correct it).
 */
export function responseProblem(method: string, params: Record<string, unknown>, response: unknown): string | undefined {
  switch (method) {
    case 'elicitation/create': {
      if (!isPlainElicitResult(response) && !ElicitResultSchema.safeParse(response).success) {
        return 'it is not an elicitation result ({"action": "accept" | "decline" | "cancel", "content"?})';
      }
      const { action, content } = response as { action: string; content?: Record<string, unknown> };
      if (action !== 'accept' || params['mode'] === 'url') return undefined;
      return contentProblem(params['requestedSchema'], content ?? {});
    }
    case 'sampling/createMessage': {
      const schema = params['tools'] !== undefined ? CreateMessageResultWithToolsSchema : CreateMessageResultSchema;
      return schema.safeParse(response).success
        ? undefined
        : 'it is not a sampling result ({"role": "assistant", "content": {"type": "text", "text": ...}, "model": ...})';
    }
    case 'roots/list':
      return ListRootsResultSchema.safeParse(response).success ? undefined : 'it is not a roots/list result ({"roots": [...]})';
    default:
      return 'nothing of that kind was asked';
  }
}

type PropertySchema = { type?: unknown; enum?: unknown; oneOf?: unknown; anyOf?: unknown; items?: unknown; minimum?: unknown; maximum?: unknown };

/** The content of an accepted elicitation against its requested schema (flat primitive properties, as the spec allows). */
function contentProblem(requestedSchema: unknown, content: Record<string, unknown>): string | undefined {
  if (!isPlainObject(requestedSchema)) return undefined;
  const properties = isPlainObject(requestedSchema['properties']) ? (requestedSchema['properties'] as Record<string, PropertySchema>) : {};
  const required = Array.isArray(requestedSchema['required']) ? (requestedSchema['required'] as unknown[]) : [];
  for (const name of required) {
    if (typeof name === 'string' && content[name] === undefined) return `content.${name} is required`;
  }
  for (const [name, value] of Object.entries(content)) {
    const prop = properties[name];
    if (!prop || !isPlainObject(prop)) continue;
    const problem = valueProblem(prop, value);
    if (problem) return `content.${name} ${problem}`;
  }
  return undefined;
}

function allowedValues(prop: PropertySchema): unknown[] | undefined {
  if (Array.isArray(prop.enum)) return prop.enum;
  const options = Array.isArray(prop.oneOf) ? prop.oneOf : Array.isArray(prop.anyOf) ? prop.anyOf : undefined;
  return options?.map((o) => (isPlainObject(o) ? o['const'] : undefined)).filter((v) => v !== undefined);
}

function valueProblem(prop: PropertySchema, value: unknown): string | undefined {
  switch (prop.type) {
    case 'string':
      if (typeof value !== 'string') return 'must be a string';
      break;
    case 'number':
    case 'integer':
      if (typeof value !== 'number' || !Number.isFinite(value)) return `must be a ${prop.type}`;
      if (prop.type === 'integer' && !Number.isInteger(value)) return 'must be an integer';
      if (typeof prop.minimum === 'number' && value < prop.minimum) return `must be at least ${prop.minimum}`;
      if (typeof prop.maximum === 'number' && value > prop.maximum) return `must be at most ${prop.maximum}`;
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return 'must be true or false';
      break;
    case 'array': {
      if (!Array.isArray(value)) return 'must be an array';
      const items = isPlainObject(prop.items) ? allowedValues(prop.items as PropertySchema) : undefined;
      const bad = items ? value.find((v) => !items.includes(v)) : undefined;
      if (bad !== undefined) return `may only hold ${items!.map((v) => JSON.stringify(v)).join(', ')}`;
      return undefined;
    }
    default:
      break;
  }
  const allowed = allowedValues(prop);
  if (allowed && allowed.length > 0 && !allowed.includes(value)) return `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
  return undefined;
}
