/**
 * The JSON Schema validator every legacy session's SDK server checks a client's accepted elicitation
 * content with: the SDK's own (`AjvJsonSchemaValidator`, as its Node default), shared by all sessions,
 * with each compiled schema remembered by its text.
 *
 * The SDK server compiles `requestedSchema` at every elicitation it sends (Ajv, which generates code),
 * and its Ajv engine keeps every schema it compiled for as long as the server lives. A session's server
 * lives as long as the session: each elicitation of a legacy round cost the gateway about 0.4 ms of CPU
 * (15% of a round at concurrency 16) and 4-7 KiB of heap held until the session closed. Here one
 * compile serves every elicitation that asks with the same schema text, at most `REMEMBERED` texts are
 * kept, and the shared engines are replaced (what they hold goes with them) after `COMPILES_PER_ENGINE`
 * compiles or `CHARS_PER_ENGINE` characters of schema text, whichever comes first.
 *
 * The shared engines take plain schemas only: no identifier or reference keyword (`$id`, `$ref`,
 * `$anchor`, …), which an Ajv engine records across the schemas it compiles (one backend's `$id` would
 * change how another backend's `$ref` resolves), and no text over `MAX_SHARED_TEXT`. Any other schema
 * is compiled by engines of its own, used once and left to the collector, as the SDK server's own were
 * (an elicitation's `requestedSchema` is a flat object of primitive properties: such schemas are rare).
 */
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';

/** Distinct schema texts remembered, the least recently used first out. */
export const REMEMBERED = 256;
/** Schemas the shared engines compile before they are replaced. */
export const COMPILES_PER_ENGINE = 1_024;
/** Characters of schema text the shared engines compile before they are replaced. */
export const CHARS_PER_ENGINE = 1024 * 1024;
/** A schema whose text is longer is compiled by engines of its own. */
export const MAX_SHARED_TEXT = 16 * 1024;
/** Keywords that name or refer to a schema: such a schema is compiled by engines of its own. */
const IDENTIFYING = /"\$(?:id|ref|anchor|dynamicRef|dynamicAnchor|recursiveRef|recursiveAnchor)"/;

export function rememberingSchemaValidator(make: () => jsonSchemaValidator = () => new AjvJsonSchemaValidator()): jsonSchemaValidator {
  const known = new Map<string, JsonSchemaValidator<unknown>>();
  let engine: jsonSchemaValidator | undefined;
  let compiles = 0;
  let chars = 0;
  const compileShared = <T>(schema: JsonSchemaType, text: string): JsonSchemaValidator<T> => {
    if (engine === undefined || compiles >= COMPILES_PER_ENGINE || chars + text.length > CHARS_PER_ENGINE) {
      // The remembered validators hold the old engine: they go with it.
      known.clear();
      engine = make();
      compiles = 0;
      chars = 0;
    }
    compiles++;
    chars += text.length;
    return engine.getValidator<T>(schema);
  };
  return {
    getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
      const text = JSON.stringify(schema);
      if (text.length > MAX_SHARED_TEXT || IDENTIFYING.test(text)) return make().getValidator<T>(schema);
      const hit = known.get(text);
      if (hit) {
        known.delete(text); // most recently used last
        known.set(text, hit);
        return hit as JsonSchemaValidator<T>;
      }
      const fresh = compileShared<T>(schema, text);
      known.set(text, fresh as JsonSchemaValidator<unknown>);
      if (known.size > REMEMBERED) known.delete(known.keys().next().value!);
      return fresh;
    },
  };
}
