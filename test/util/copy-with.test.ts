import { describe, expect, it } from 'vitest';
import { copyWith } from '../../src/util/copy-with.js';

describe('copyWith', () => {
  it('copies the source with the extra keys over it, the source untouched', () => {
    const source = { a: 1, b: { c: 2 } };
    const copy = copyWith(source, { b: 3, d: 4 });
    expect(copy).toEqual({ a: 1, b: 3, d: 4 });
    expect(source).toEqual({ a: 1, b: { c: 2 } });
    expect(copyWith(undefined, { x: 1 })).toEqual({ x: 1 });
  });

  it('keeps an own __proto__ key an own key, never the prototype of the copy', () => {
    const source = JSON.parse('{"name":"echo","__proto__":{"task":{"ttl":1}}}') as Record<string, unknown>;
    const copy = copyWith(source, { _meta: {} });
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect((copy as { task?: unknown }).task).toBeUndefined();
    expect(JSON.parse(JSON.stringify(copy))).toEqual(JSON.parse('{"name":"echo","__proto__":{"task":{"ttl":1}},"_meta":{}}'));
  });
});
