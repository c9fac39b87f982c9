/**
 * The architecture, made executable: module layering, package placement, no import cycles, no default
 * exports, process.env only in the entry point (rules in test/helpers/import-graph.ts). The checker is
 * itself checked: it must see every file of src/, and it must report violations planted in temp trees.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../src/version.js';
import { buildGraph, checkArchitecture, classify, collectImports } from './helpers/import-graph.js';

const SRC = join(import.meta.dirname, '..', 'src');

/** Writes `files` (src-relative path → text) into a fresh temp src/ tree, checks it, and removes it. */
function checkTree(files: Record<string, string>): string[] {
  const root = mkdtempSync(join(tmpdir(), 'arch-test-'));
  try {
    for (const [rel, text] of Object.entries(files)) {
      const path = join(root, 'src', rel);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
    }
    return checkArchitecture(join(root, 'src')).violations;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

describe('architecture of src/', () => {
  it('has no violations: layering, packages, cycles, default exports, process.env', () => {
    const { violations } = checkArchitecture(SRC);
    expect(violations, `architecture violations:\n  ${violations.join('\n  ')}`).toEqual([]);
  });

  it('checks every .ts file under src/, and each belongs to a module', () => {
    const listed = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.split(sep).join('/'))
      .sort();
    const report = checkArchitecture(SRC);
    expect(report.files).toEqual(listed);
    expect(report.files.length).toBeGreaterThan(20);
    expect(report.edges).toBeGreaterThan(40);
    expect(report.files.filter((f) => classify(f) === undefined)).toEqual([]);
    expect(buildGraph(SRC).edges.some((e) => e.external && e.to === 'hono')).toBe(true);
  });

  it('keeps the version in step with package.json', () => {
    expect(JSON.parse(readFileSync(join(SRC, '..', 'package.json'), 'utf8')).version).toBe(VERSION);
  });
});

describe('collectImports', () => {
  it('reads every import form and marks the type-only ones', () => {
    const text = [
      `import x from './a.js';`,
      `import type { T } from './b.js';`,
      `import './c.js';`,
      `export { y } from './d.js';`,
      `export type { Z } from './e.js';`,
      `const f = () => import('./f.js');`,
      `import g = require('./g.js');`,
      `type H = import('./h.js').H;`,
      `// import { nope } from './comment.js';`,
    ].join('\n');
    const got = collectImports('x.ts', text).map(({ specifier, kind, typeOnly }) => [specifier, kind, typeOnly]);
    expect(got).toEqual([
      ['./a.js', 'import', false],
      ['./b.js', 'import', true],
      ['./c.js', 'side-effect', false],
      ['./d.js', 'export-from', false],
      ['./e.js', 'export-from', true],
      ['./f.js', 'dynamic', false],
      ['./g.js', 'import-equals', false],
      ['./h.js', 'import-type-node', true],
    ]);
  });
});

describe('the checker reports planted violations', () => {
  const CALLS = { 'core/calls/c.ts': `export const c = 1;\nexport type C = number;\n` };

  it('core importing http', () => {
    const violations = checkTree({ 'core/x.ts': `import { app } from '../http/app.js';\nexport const x = app;\n`, 'http/app.ts': `export const app = 1;\n` });
    expect(violations).toEqual(['core/x.ts imports http/app.ts (core → http is not allowed)']);
  });

  it('http reaching into core or cluster (it speaks to fronts only)', () => {
    const violations = checkTree({
      ...CALLS,
      'cluster/seam.ts': `export const seam = 1;\n`,
      'http/post.ts': `import { c } from '../core/calls/c.js';\nimport { seam } from '../cluster/seam.js';\nexport const p = c + seam;\n`,
    });
    expect(violations).toEqual([
      'http/post.ts imports core/calls/c.ts (http → core/calls is not allowed)',
      'http/post.ts imports cluster/seam.ts (http → cluster is not allowed)',
    ]);
  });

  it.each([
    ['plain import', `import { c } from '../calls/c.js';\nexport const b = c;\n`],
    ['import type', `import type { C } from '../calls/c.js';\nexport type B = C;\n`],
    ['side-effect import', `import '../calls/c.js';\n`],
    ['export from', `export { c } from '../calls/c.js';\n`],
    ['export type from', `export type { C } from '../calls/c.js';\n`],
    ['dynamic import()', `export const load = () => import('../calls/c.js');\n`],
    ['import = require', `import c = require('../calls/c.js');\nexport const b = c;\n`],
    ['import() type', `export type B = import('../calls/c.js').C;\n`],
  ])('core/backend importing core/calls by %s', (_form, text) => {
    const violations = checkTree({ ...CALLS, 'core/backend/b.ts': text });
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatch(/^core\/backend\/b\.ts imports core\/calls\/c\.ts \(core\/backend → core\/calls is not allowed\)/);
  });

  it('core/backend importing core/catalog.ts, though it may import core/input-capabilities.ts', () => {
    const violations = checkTree({
      'core/catalog.ts': `export const catalog = 1;\n`,
      'core/input-capabilities.ts': `export const caps = 1;\n`,
      'core/backend/b.ts': `import { catalog } from '../catalog.js';\nimport { caps } from '../input-capabilities.js';\nexport const b = catalog + caps;\n`,
    });
    expect(violations).toEqual(['core/backend/b.ts imports core/catalog.ts (core/backend → core/catalog.ts is not allowed)']);
  });

  it('an import cycle, even within one module', () => {
    const violations = checkTree({
      'util/a.ts': `import { b } from './b.js';\nexport const a = () => b;\n`,
      'util/b.ts': `import { a } from './a.js';\nexport const b = () => a;\n`,
    });
    expect(violations).toEqual(['import cycle: util/a.ts → util/b.ts → util/a.ts']);
  });

  it('hono outside http, and @hono/node-server outside main', () => {
    const violations = checkTree({
      'core/x.ts': `import { Hono } from 'hono';\nexport const x = new Hono();\n`,
      'gateway.ts': `import { serve } from '@hono/node-server';\nexport const g = serve;\n`,
    });
    expect(violations).toEqual([
      `core/x.ts imports 'hono' (hono only from http; not from core)`,
      `gateway.ts imports '@hono/node-server' (@hono/node-server only from main; not from root)`,
    ]);
  });

  it('prom-client outside observe, and observe importing up the layers', () => {
    const violations = checkTree({
      'core/x.ts': `import { Counter } from 'prom-client';\nexport const x = Counter;\n`,
      'observe/m.ts': `import { y } from '../core/y.js';\nexport const m = y;\n`,
      'core/y.ts': `export const y = 1;\n`,
    });
    expect(violations).toEqual([
      `core/x.ts imports 'prom-client' (prom-client only from observe; not from core)`,
      'observe/m.ts imports core/y.ts (observe → core is not allowed)',
    ]);
  });

  it('the OpenTelemetry SDK or exporter outside the entry point (its API is allowed anywhere), and otel-sdk.ts imported by anything but main', () => {
    const violations = checkTree({
      'core/x.ts': `import { trace } from '@opentelemetry/api';\nimport { TracerProvider } from '@opentelemetry/sdk-trace';\nexport const x = [trace, TracerProvider];\n`,
      'http/y.ts': `import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';\nexport const y = OTLPTraceExporter;\n`,
      'otel-sdk.ts': `import { TracerProvider } from '@opentelemetry/sdk-trace';\nexport const start = () => new TracerProvider();\n`,
      'gateway.ts': `import { start } from './otel-sdk.js';\nexport const g = start;\n`,
      'main.ts': `import { start } from './otel-sdk.js';\nstart();\n`,
    });
    expect(violations).toEqual([
      `core/x.ts imports '@opentelemetry/sdk-trace' (the OpenTelemetry SDK only from main; not from core)`,
      'gateway.ts imports otel-sdk.ts (root → main is not allowed)',
      `http/y.ts imports '@opentelemetry/exporter-trace-otlp-http' (the OpenTelemetry SDK only from main; not from http)`,
    ]);
  });

  it('a relative import that resolves to no file', () => {
    const violations = checkTree({ 'util/a.ts': `import { gone } from './gone.js';\nexport const a = gone;\n` });
    expect(violations).toEqual([`util/a.ts:1 imports './gone.js', which resolves to no .ts file under src/`]);
  });

  it('a file that belongs to no module', () => {
    expect(checkTree({ 'foo.ts': `export const foo = 1;\n` })).toEqual(['foo.ts belongs to no module (add it to the classification)']);
  });

  it('a default export and a process.env read outside the entry point', () => {
    const violations = checkTree({ 'util/a.ts': `export default function a(): string | undefined {\n  return process.env['X'];\n}\n` });
    expect(violations).toEqual([
      "util/a.ts:1 has a default export (named exports only; a Worker entry's is its contract)",
      'util/a.ts:2 reads process.env (only main.ts and demo/** may)',
    ]);
  });

  it("Node on the edge handler's path (not a type-only import, not a file off its path), and the Node gateway importing the edge", () => {
    const violations = checkTree({
      'edge/worker.ts': `import { g } from './edge-gateway.js';\nexport default { fetch: g };\n`,
      'edge/edge-gateway.ts': `import { c } from '../core/c.js';\nimport type { Server } from 'node:http';\nexport const g = c;\nexport type S = Server;\n`,
      'core/c.ts': `import { d } from './d.js';\nexport const c = d;\n`,
      'core/d.ts': `import { readFileSync } from 'fs';\nimport pino from 'pino';\nexport const d = [readFileSync, pino];\n`,
      'core/off-path.ts': `import { spawn } from 'node:child_process';\nexport const o = spawn;\n`,
      'gateway.ts': `import { g } from './edge/edge-gateway.js';\nexport const gw = g;\n`,
    });
    expect(violations).toEqual([
      'gateway.ts imports edge/edge-gateway.ts (root → edge is not allowed)',
      "edge/worker.ts reaches edge/worker.ts → edge/edge-gateway.ts → core/c.ts → core/d.ts, which imports 'fs' (the edge handler runs without Node)",
      "edge/worker.ts reaches edge/worker.ts → edge/edge-gateway.ts → core/c.ts → core/d.ts, which imports 'pino' (the edge handler runs without Node)",
    ]);
  });

  it('a default export in the edge entry only', () => {
    expect(checkTree({ 'edge/worker.ts': `export default { fetch: () => new Response() };\n` })).toEqual([]);
    expect(checkTree({ 'edge/other.ts': `export default 1;\n` })).toEqual([
      "edge/other.ts:1 has a default export (named exports only; a Worker entry's is its contract)",
    ]);
  });

  it('nothing in a small tree that keeps the rules', () => {
    const violations = checkTree({
      'util/ids.ts': `export const id = () => 'x';\n`,
      'errors.ts': `import { id } from './util/ids.js';\nexport const err = id;\n`,
      'core/catalog.ts': `import type { Port } from './backend/port.js';\nexport type Catalog = Port[];\n`,
      'core/backend/port.ts': `export interface Port { name: string }\n`,
      'core/calls/call.ts': `import type { Catalog } from '../catalog.js';\nexport type Call = Catalog;\n`,
      'http/app.ts': `import { Hono } from 'hono';\nimport { err } from '../errors.js';\nexport const app = new Hono();\nexport const e = err;\n`,
      'gateway.ts': `import { app } from './http/app.js';\nimport type { Call } from './core/calls/call.js';\nexport const gw = app;\nexport type G = Call;\n`,
      'main.ts': `import { serve } from '@hono/node-server';\nimport { gw } from './gateway.js';\nserve(gw);\nconsole.log(process.env['PORT']);\n`,
    });
    expect(violations).toEqual([]);
  });
});
