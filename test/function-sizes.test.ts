/**
 * Long bodies read as named steps (STYLE.md: aim under ~80 lines; ROOMS.md): no function in src/ is
 * longer than MAX_LINES. The measure is itself checked on planted code. The largest functions, and why
 * each reads as steps: spec/notes/function-sizes.md.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionSizes, treeFunctionSizes } from './helpers/function-sizes.js';

const MAX_LINES = 120;

describe('function sizes in src/', () => {
  it(`has no function over ${MAX_LINES} lines`, () => {
    const sizes = treeFunctionSizes(join(import.meta.dirname, '..', 'src'));
    expect(sizes.length).toBeGreaterThan(500);
    const over = sizes.filter((s) => s.lines > MAX_LINES).map((s) => `${s.file}:${s.line} ${s.name} (${s.lines} lines)`);
    expect(over, `functions over ${MAX_LINES} lines:\n  ${over.join('\n  ')}`).toEqual([]);
  });

  it('measures every kind of function, each with its name and its lines', () => {
    const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [
      `export function long(): void {\n${body(130)}\n}`,
      `export const arrow = (): void => {\n${body(3)}\n};`,
      `export class K {\n  constructor() {}\n  method(): number {\n    return [1].map(function inner(x) { return x; })[0]!;\n  }\n}`,
      `export const o = { prop: () => 1 };`,
    ].join('\n');
    const got = functionSizes('x.ts', text).map(({ name, line, lines }) => [name, line, lines]);
    expect(got).toEqual([
      ['long', 1, 132],
      ['arrow', 133, 5],
      ['K.constructor', 139, 1],
      ['K.method', 140, 3],
      ['K.inner', 141, 1],
      ['prop', 144, 1],
    ]);
    expect(got.filter(([, , lines]) => (lines as number) > MAX_LINES)).toEqual([['long', 1, 132]]);
  });
});
