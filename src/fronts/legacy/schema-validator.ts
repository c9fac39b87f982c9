/**
 * The JSON Schema validator every legacy session's SDK server checks a client's accepted elicitation
 * content with: the SDK's own (`AjvJsonSchemaValidator`, as its Node default), shared by all sessions,
 * with each compiled schema remembered by its text.
 *
 * The SDK server compiles `requestedSchema` at every elicitation it sends (Ajv, which generates code),
 * and its Ajv engine keeps every schema it compiled for as long as the server lives. A session's server
 * lives as long as the session: each elicitation of a legacy round cost the gateway about 0.4 ms of CPU
 * (15% of a round at concurrency 16) and 4-7 KiB of heap held until the session closed. Here one
 * compile serves every elicitation that asks with the same schema text, at most `REMEMBERED` schemas
 * are kept, and the engines are replaced (what they hold goes with them) after `COMPILES_PER_ENGINE`
 * compiles, so a backend that asks with a new schema each time cannot grow the heap either.
 *
 * A schema's top-level `$id` is left out of what is compiled: an engine serves schemas from every backend
 * and session, and Ajv answers a schema whose `$id` it has seen with the first schema of that id.
 */
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';

/** Distinct schema texts remembered, the least recently used first out. */
export const REMEMBERED = 256;
/** Schemas one set of engines compiles before it is replaced. */
export const COMPILES_PER_ENGINE = 1_024;
/** A schema whose text is longer is compiled each time, not remembered. */
const MAX_TEXT = 16 * 1024;

export function rememberingSchemaValidator(make: () => jsonSchemaValidator = () => new AjvJsonSchemaValidator()): jsonSchemaValidator {
  const known = new Map<string, JsonSchemaValidator<unknown>>();
  let engine: jsonSchemaValidator | undefined;
  let compiles = 0;
  const compile = <T>(schema: JsonSchemaType): JsonSchemaValidator<T> => {
    if (engine === undefined || compiles >= COMPILES_PER_ENGINE) {
      // The remembered validators hold the old engine: they go with it.
      known.clear();
      engine = make();
      compiles = 0;
    }
    compiles++;
    return engine.getValidator<T>(withoutId(schema));
  };
  return {
    getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
      const text = JSON.stringify(schema);
      if (text.length > MAX_TEXT) return compile<T>(schema);
      const hit = known.get(text);
      if (hit) {
        known.delete(text); // most recently used last
        known.set(text, hit);
        return hit as JsonSchemaValidator<T>;
      }
      const fresh = compile<T>(schema);
      known.set(text, fresh as JsonSchemaValidator<unknown>);
      if (known.size > REMEMBERED) known.delete(known.keys().next().value!);
      return fresh;
    },
  };
}

function withoutId(schema: JsonSchemaType): JsonSchemaType {
  if (!('$id' in schema)) return schema;
  const { $id: _id, ...rest } = schema;
  return rest;
}
