import type { JsonSchemaType, jsonSchemaValidator } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { describe, expect, it } from 'vitest';
import { CHARS_PER_ENGINE, COMPILES_PER_ENGINE, MAX_SHARED_TEXT, REMEMBERED, rememberingSchemaValidator } from '../../../src/fronts/legacy/schema-validator.js';

/** The SDK's validator, counting its compiles and the engines made. */
function counted(): { make: () => jsonSchemaValidator; compiles: () => number; engines: () => number } {
  let compiles = 0;
  let engines = 0;
  return {
    make() {
      engines++;
      const sdk = new AjvJsonSchemaValidator();
      return {
        getValidator<T>(schema: JsonSchemaType) {
          compiles++;
          return sdk.getValidator<T>(schema);
        },
      };
    },
    compiles: () => compiles,
    engines: () => engines,
  };
}

const nameSchema = (): JsonSchemaType => ({ type: 'object', properties: { name: { type: 'string', minLength: 2 } }, required: ['name'] });

describe('the legacy sessions’ schema validator', () => {
  it('answers as the SDK’s own validator does, for accepted and refused content, in each dialect and with formats', () => {
    const ours = rememberingSchemaValidator();
    const schemas: JsonSchemaType[] = [
      nameSchema(),
      { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] },
      { type: 'object', properties: { mail: { type: 'string', format: 'email' }, age: { type: 'number', maximum: 150 } }, required: ['mail', 'age'] },
    ];
    const inputs: unknown[] = [
      { name: 'Ada' },
      { name: 'A' },
      {},
      { name: 7 },
      { name: 'Ada', extra: true },
      { n: 0 },
      { n: 2 },
      { mail: 'a@b.c', age: 3 },
      { mail: 'nope', age: 200 },
      'text',
      null,
    ];
    for (const schema of schemas) {
      for (const input of inputs) {
        const sdk = new AjvJsonSchemaValidator(); // a fresh one each time, as a session's server had
        expect(ours.getValidator(structuredClone(schema))(input)).toEqual(sdk.getValidator(structuredClone(schema))(input));
      }
    }
    expect(ours.getValidator(nameSchema())({ name: 'A' })).toMatchObject({ valid: false, errorMessage: expect.stringContaining('name') });
    // Every error is named (the SDK's engines collect all of them).
    expect(ours.getValidator(structuredClone(schemas[2]!))({ mail: 'nope', age: 200 }).errorMessage).toMatch(/mail.*age|age.*mail/);
  });

  it('compiles a schema once for every elicitation that asks with the same text (a new object each time, as each message is parsed)', () => {
    const c = counted();
    const v = rememberingSchemaValidator(c.make);
    for (let i = 0; i < 50; i++) expect(v.getValidator(nameSchema())({ name: 'Ada' }).valid).toBe(true);
    expect(c.compiles()).toBe(1);
    v.getValidator({ ...nameSchema(), required: [] });
    expect(c.compiles()).toBe(2);
  });

  it(`keeps ${REMEMBERED} schemas, the least recently used first out`, () => {
    const c = counted();
    const v = rememberingSchemaValidator(c.make);
    const schema = (i: number): JsonSchemaType => ({ type: 'object', properties: { [`f${i}`]: { type: 'string' } } });
    for (let i = 0; i <= REMEMBERED; i++) {
      v.getValidator(schema(i));
      v.getValidator(schema(0)); // kept in use: never the least recently used
    }
    expect(c.compiles()).toBe(REMEMBERED + 1);
    v.getValidator(schema(0));
    v.getValidator(schema(REMEMBERED));
    expect(c.compiles()).toBe(REMEMBERED + 1);
    v.getValidator(schema(1)); // the least recently used: it went out
    expect(c.compiles()).toBe(REMEMBERED + 2);
  });

  it(`replaces its engines after ${COMPILES_PER_ENGINE} compiles, forgetting what the old ones compiled`, () => {
    const c = counted();
    const v = rememberingSchemaValidator(c.make);
    const schema = (i: number): JsonSchemaType => ({ type: 'object', properties: { [`f${i}`]: { type: 'number' } } });
    for (let i = 0; i < COMPILES_PER_ENGINE; i++) v.getValidator(schema(i));
    expect(c.engines()).toBe(1);
    v.getValidator(schema(COMPILES_PER_ENGINE - 1)); // remembered: no compile
    expect(c.engines()).toBe(1);
    v.getValidator(schema(COMPILES_PER_ENGINE));
    expect(c.engines()).toBe(2);
    v.getValidator(schema(COMPILES_PER_ENGINE - 1)); // forgotten with the old engine
    expect(c.compiles()).toBe(COMPILES_PER_ENGINE + 2);
  });

  it('checks each schema against its own constraints when two share an $id (from two backends)', () => {
    const v = rememberingSchemaValidator();
    const id = 'https://example.com/ask';
    const short: JsonSchemaType = { $id: id, type: 'object', properties: { n: { type: 'string', maxLength: 3 } }, required: ['n'] };
    const long: JsonSchemaType = { $id: id, type: 'object', properties: { n: { type: 'string', minLength: 5 } }, required: ['n'] };
    expect(v.getValidator(short)({ n: 'abc' }).valid).toBe(true);
    expect(v.getValidator(long)({ n: 'abc' }).valid).toBe(false);
    expect(v.getValidator(long)({ n: 'abcdef' }).valid).toBe(true);
    expect(v.getValidator(short)({ n: 'abcdef' }).valid).toBe(false);
  });

  it('lets no schema’s $id or $ref reach another’s: one backend’s nested $id does not resolve another’s $ref', () => {
    const v = rememberingSchemaValidator();
    const naming: JsonSchemaType = { type: 'object', properties: { a: { $id: 'https://example.com/x', type: 'string' } } };
    const referring: JsonSchemaType = { type: 'object', properties: { a: { type: 'number' }, b: { $ref: 'https://example.com/x' } } };
    expect(v.getValidator(naming)({ a: 'text' }).valid).toBe(true);
    // As a fresh SDK validator answers: the reference names nothing it knows.
    expect(() => new AjvJsonSchemaValidator().getValidator(structuredClone(referring))).toThrow(/resolve reference/);
    expect(() => v.getValidator(referring)).toThrow(/resolve reference/);
  });

  it('checks a schema that refers to itself by its absolute $id', () => {
    const v = rememberingSchemaValidator();
    const schema: JsonSchemaType = {
      $id: 'https://example.com/ask',
      $defs: { n: { type: 'string', minLength: 2 } },
      type: 'object',
      properties: { n: { $ref: 'https://example.com/ask#/$defs/n' } },
    };
    expect(v.getValidator(schema)({ n: 'ab' }).valid).toBe(true);
    expect(v.getValidator(schema)({ n: 'a' }).valid).toBe(false);
  });

  it(`compiles a schema over ${MAX_SHARED_TEXT} characters, and one with a $ref, with engines of its own, never the shared ones`, () => {
    const c = counted();
    const v = rememberingSchemaValidator(c.make);
    const huge: JsonSchemaType = { type: 'object', properties: { n: { type: 'string', description: 'd'.repeat(MAX_SHARED_TEXT) } } };
    v.getValidator(nameSchema());
    expect(c.engines()).toBe(1);
    expect(v.getValidator(huge)({ n: 'x' }).valid).toBe(true);
    expect(v.getValidator({ type: 'object', $defs: { s: { type: 'string' } }, properties: { n: { $ref: '#/$defs/s' } } })({ n: 1 }).valid).toBe(false);
    expect(c.engines()).toBe(3); // one each, used once
    v.getValidator(nameSchema()); // the shared one, and what it remembers, are untouched
    expect(c.compiles()).toBe(3);
  });

  it(`replaces its engines after ${CHARS_PER_ENGINE} characters of schema text, however few the schemas`, () => {
    const c = counted();
    const v = rememberingSchemaValidator(c.make);
    const schema = (i: number): JsonSchemaType => ({ type: 'object', description: `${i}`.padEnd(MAX_SHARED_TEXT - 100, '.') });
    const fit = Math.floor(CHARS_PER_ENGINE / JSON.stringify(schema(0)).length);
    for (let i = 0; i < fit; i++) v.getValidator(schema(i));
    expect(c.engines()).toBe(1);
    v.getValidator(schema(fit));
    expect(c.engines()).toBe(2);
  });
});
