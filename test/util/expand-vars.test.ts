import { describe, expect, it } from 'vitest';
import { expandVariables } from '../../src/util/expand-vars.js';

const ctx = { env: { A: 'a', EMPTY: '' }, workspaceFolder: '/w', userHome: '/h' };

function expand(text: string): { out: string; problems: string[] } {
  const problems: string[] = [];
  return { out: expandVariables(text, ctx, problems), problems };
}

describe('expandVariables', () => {
  it('reads ${VAR}, ${env:VAR}, ${workspaceFolder} and ${userHome}', () => {
    expect(expand('${A}-${env:A}-${workspaceFolder}-${userHome}')).toEqual({ out: 'a-a-/w-/h', problems: [] });
  });

  it('takes a default when the variable is unset or empty, and expands what the default holds', () => {
    expect(expand('${NOPE:-x}|${EMPTY:-y}|${NOPE:-${userHome}/m}')).toEqual({ out: 'x|y|/h/m', problems: [] });
    expect(expand('[${EMPTY}]')).toEqual({ out: '[]', problems: [] });
  });

  it('names an unset variable without a default and a VS Code input as problems', () => {
    const r = expand('${NOPE} ${input:key}');
    expect(r.problems).toHaveLength(2);
    expect(r.problems[0]).toMatch(/NOPE is not set/);
    expect(r.problems[1]).toMatch(/input:key.*prompt/);
  });

  it('leaves what is not a variable as written', () => {
    expect(expand('$HOME ${1abc} ${} plain')).toEqual({ out: '$HOME ${1abc} ${} plain', problems: [] });
  });
});
