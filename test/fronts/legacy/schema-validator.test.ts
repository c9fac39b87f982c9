import type { JsonSchemaType, jsonSchemaValidator } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { describe, expect, it } from 'vitest';
import { COMPILES_PER_ENGINE, REMEMBERED, rememberingSchemaValidator } from '../../../src/fronts/legacy/schema-validator.js';

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
  it('answers as the SDK’s own validator does, for accepted and refused content', () => {
    const ours = rememberingSchemaValidator();
    const sdk = new AjvJsonSchemaValidator();
    const inputs: unknown[] = [{ name: 'Ada' }, { name: 'A' }, {}, { name: 7 }, { name: 'Ada', extra: true }, 'text', null];
    for (const input of inputs) {
      const a = ours.getValidator(nameSchema())(input);
      const b = sdk.getValidator(nameSchema())(input);
      expect(a).toEqual(b);
    }
    expect(ours.getValidator(nameSchema())({ name: 'A' })).toMatchObject({ valid: false, errorMessage: expect.stringContaining('name') });
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
    const short: JsonSchemaType = { $id: 'urn:ask', type: 'object', properties: { n: { type: 'string', maxLength: 3 } }, required: ['n'] };
    const long: JsonSchemaType = { $id: 'urn:ask', type: 'object', properties: { n: { type: 'string', minLength: 5 } }, required: ['n'] };
    expect(v.getValidator(short)({ n: 'abc' }).valid).toBe(true);
    expect(v.getValidator(long)({ n: 'abc' }).valid).toBe(false);
    expect(v.getValidator(long)({ n: 'abcdef' }).valid).toBe(true);
    expect(v.getValidator(short)({ n: 'abcdef' }).valid).toBe(false);
  });
});
