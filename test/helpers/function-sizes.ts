/**
 * The size of every function with a body in a tree of .ts files, read with the TypeScript compiler:
 * declarations, methods, constructors, accessors, arrow functions and function expressions (an inner
 * function counts inside its outer one and on its own). test/function-sizes.test.ts keeps each under a
 * bound; spec/notes/function-sizes.md lists the largest.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, sep } from 'node:path';
import ts from 'typescript';

export interface FunctionSize {
  /** `Class.method`, a declared or assigned name, or `<anonymous>`. */
  readonly name: string;
  /** Root-relative path with posix separators, and the line the function starts on. */
  readonly file: string;
  readonly line: number;
  /** Lines from its first to its last, both counted (comments and blank lines too). */
  readonly lines: number;
}

function nameOf(node: ts.SignatureDeclaration, sf: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name) return node.name.getText(sf);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(sf);
  return '<anonymous>';
}

function classOf(node: ts.Node): string {
  for (let p = node.parent; p; p = p.parent) if (ts.isClassLike(p) && p.name) return `${p.name.text}.`;
  return '';
}

/** Every function with a body in `text`, in source order. */
export function functionSizes(file: string, text: string): FunctionSize[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: FunctionSize[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
      out.push({ name: classOf(node) + nameOf(node, sf), file, line, lines: end - line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Every function of every .ts file under `root`, largest first. */
export function treeFunctionSizes(root: string): FunctionSize[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .flatMap((f) => functionSizes(f.split(sep).join('/'), readFileSync(join(root, f), 'utf8')))
    .sort((a, b) => b.lines - a.lines);
}
