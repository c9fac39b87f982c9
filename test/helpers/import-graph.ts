/**
 * The import graph of src/ and the rules it must obey, as plain data: every import form is read with the
 * TypeScript compiler (not a regex), relative specifiers are resolved to files, and each file is placed in a
 * module. `checkArchitecture` returns one readable message per violation; test/architecture.test.ts asserts
 * there are none, and plants violations in temp trees to prove it can fail.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, posix } from 'node:path';
import { builtinModules } from 'node:module';
import ts from 'typescript';

export type ImportKind = 'import' | 'side-effect' | 'export-from' | 'dynamic' | 'import-equals' | 'import-type-node' | 'other';

/** One import specifier of a file; `typeOnly` is informational (erased at runtime), such edges still count. */
export interface ImportRecord {
  specifier: string;
  kind: ImportKind;
  typeOnly: boolean;
  line: number;
}

/** A resolved import: `to` is a src-relative file, or the specifier itself when `external`. */
export interface Edge extends ImportRecord {
  from: string;
  to: string;
  external: boolean;
}

export interface Graph {
  /** Every .ts file under srcDir, src-relative with posix separators, sorted. */
  files: string[];
  edges: Edge[];
  /** Imports that cannot be resolved or checked. */
  violations: string[];
}

export interface ArchitectureReport {
  files: string[];
  /** Distinct file → file edges (relative imports only). */
  edges: number;
  violations: string[];
}

export type ModuleName =
  | 'util'
  | 'base'
  | 'observe'
  | 'auth'
  | 'cluster'
  | 'protocol'
  | 'core'
  | 'core/backend'
  | 'core/calls'
  | 'fronts'
  | 'http'
  | 'demo'
  | 'edge'
  | 'root'
  | 'main';

const MODULES: readonly ModuleName[] = [
  'util',
  'base',
  'observe',
  'auth',
  'cluster',
  'protocol',
  'core',
  'core/backend',
  'core/calls',
  'fronts',
  'http',
  'demo',
  'edge',
  'root',
  'main',
];
const BASE_FILES = new Set(['errors.ts', 'log.ts', 'version.ts', 'config.ts', 'config-servers.ts', 'config-gateway.ts', 'config-diagnostics.ts']);
/** Files of the entry point besides main.ts: what only it may import (nothing else may import `main`). */
const MAIN_FILES = new Set(['otel-sdk.ts', 'config-folder.ts', 'node-listeners.ts', 'node-send-timeout.ts']);
const DIR_MODULES: readonly [string, ModuleName][] = [
  ['util/', 'util'],
  ['observe/', 'observe'],
  ['auth/', 'auth'],
  ['cluster/', 'cluster'],
  ['protocol/', 'protocol'],
  ['core/backend/', 'core/backend'],
  ['core/calls/', 'core/calls'],
  ['core/', 'core'],
  ['fronts/', 'fronts'],
  ['http/', 'http'],
  ['demo/', 'demo'],
  ['edge/', 'edge'],
  ['gateway/', 'root'],
];

/** Module → the other modules it may import (its own module is always allowed). */
const ALLOWED: Record<ModuleName, readonly ModuleName[]> = {
  util: [],
  base: ['util'],
  observe: ['util', 'base'],
  auth: ['util', 'base'],
  cluster: ['util', 'base', 'observe'],
  protocol: ['util', 'base'],
  core: ['util', 'base', 'observe', 'cluster', 'core/backend', 'core/calls'],
  'core/calls': ['util', 'base', 'observe', 'cluster', 'core', 'core/backend'],
  'core/backend': ['util', 'base', 'observe', 'cluster', 'core'],
  fronts: ['util', 'base', 'observe', 'cluster', 'protocol', 'core', 'core/backend', 'core/calls'],
  http: ['util', 'base', 'observe', 'auth', 'protocol', 'fronts'],
  demo: ['util', 'base'],
  // The edge handler's composition root: the Node gateway's (root) is not on its path.
  edge: ['util', 'base', 'observe', 'auth', 'cluster', 'protocol', 'core', 'core/backend', 'core/calls', 'fronts', 'http'],
  root: MODULES.filter((m) => m !== 'main' && m !== 'edge'),
  main: MODULES.filter((m) => m !== 'edge'),
};
/** Files an otherwise allowed module may still not import (the backend layer sits below the catalog). */
const FORBIDDEN_FILES: Partial<Record<ModuleName, readonly string[]>> = { 'core/backend': ['core/catalog.ts'] };

/** Packages only some modules may import: Hono stays in http/, its Node adapter in the entry point. */
const PACKAGE_RULES: readonly { name: string; matches: (pkg: string) => boolean; only: readonly ModuleName[] }[] = [
  { name: 'hono', matches: (p) => p === 'hono' || (p.startsWith('@hono/') && p !== '@hono/node-server'), only: ['http'] },
  { name: '@hono/node-server', matches: (p) => p === '@hono/node-server', only: ['main'] },
  { name: 'redis', matches: (p) => p === 'redis' || p.startsWith('@redis/'), only: ['cluster'] },
  { name: 'prom-client', matches: (p) => p === 'prom-client', only: ['observe'] },
  { name: 'jose', matches: (p) => p === 'jose', only: ['auth'] },
  // The OpenTelemetry SDK and exporter are the entry point's (otel-sdk.ts); below it, only the API.
  { name: 'the OpenTelemetry SDK', matches: (p) => p.startsWith('@opentelemetry/') && p !== '@opentelemetry/api', only: ['main'] },
];
/**
 * The edge handler's entry (a Worker module: its default export is the runtime's contract) and what
 * may not be on its path: Node's builtins and packages that need Node (it runs in workerd).
 */
const EDGE_ENTRIES: readonly string[] = ['edge/worker.ts'];
const NODE_BUILTINS = new Set(builtinModules);
const NODE_ONLY = (specifier: string): boolean => {
  const pkg = packageOf(specifier);
  return (
    specifier.startsWith('node:') ||
    NODE_BUILTINS.has(pkg) ||
    ['@hono/node-server', 'redis', 'prom-client', 'pino', 'eventsource-parser/stream-node'].includes(pkg) ||
    pkg.startsWith('@redis/') ||
    specifier.endsWith('/stdio.js') ||
    (pkg.startsWith('@opentelemetry/') && pkg !== '@opentelemetry/api')
  );
};
/** Where `process.env` may be read: the entry point and the demo. */
const ENV_READERS = (rel: string): boolean => rel === 'main.ts' || rel.startsWith('demo/');

/** The module a src-relative file belongs to, or undefined when it belongs to none. */
export function classify(rel: string): ModuleName | undefined {
  if (BASE_FILES.has(rel)) return 'base';
  if (rel === 'gateway.ts') return 'root';
  if (rel === 'main.ts' || MAIN_FILES.has(rel)) return 'main';
  return DIR_MODULES.find(([dir]) => rel.startsWith(dir))?.[1];
}

const lineOf = (sf: ts.SourceFile, node: ts.Node): number => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
const parse = (file: string, text: string): ts.SourceFile => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);

/** Walks every node once; `visit` sees each in source order. */
function walk(sf: ts.SourceFile, visit: (node: ts.Node) => void): void {
  const go = (node: ts.Node): void => {
    visit(node);
    ts.forEachChild(node, go);
  };
  go(sf);
}

/** The import record a node stands for, if it is one of the import forms; `null` marks a computed `import(x)`. */
function importOf(node: ts.Node): Omit<ImportRecord, 'line'> | null | undefined {
  const str = (e: ts.Node | undefined): string | undefined => (e && ts.isStringLiteralLike(e) ? e.text : undefined);
  if (ts.isImportDeclaration(node) && str(node.moduleSpecifier) !== undefined) {
    const typeOnly = node.importClause?.isTypeOnly ?? false;
    return { specifier: str(node.moduleSpecifier)!, kind: node.importClause ? 'import' : 'side-effect', typeOnly };
  }
  if (ts.isExportDeclaration(node) && str(node.moduleSpecifier) !== undefined) {
    return { specifier: str(node.moduleSpecifier)!, kind: 'export-from', typeOnly: node.isTypeOnly };
  }
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
    const specifier = str(node.moduleReference.expression);
    return specifier === undefined ? null : { specifier, kind: 'import-equals', typeOnly: node.isTypeOnly };
  }
  if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
    const specifier = str(node.arguments[0]);
    return specifier === undefined ? null : { specifier, kind: 'dynamic', typeOnly: false };
  }
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
    const specifier = str(node.argument.literal);
    return specifier === undefined ? undefined : { specifier, kind: 'import-type-node', typeOnly: true };
  }
  return undefined;
}

/**
 * Every import specifier of a .ts file, in all forms (`import`, `import type`, side-effect, `export … from`,
 * `import()`, `import x = require()`, `import('…').T`). One record per distinct specifier: `typeOnly` only
 * when every occurrence is. A computed `import(x)` yields specifier `''` with kind `dynamic`. Cross-checked
 * against `ts.preProcessFile`, so a form the AST walk misses still appears (kind `other`).
 */
export function collectImports(file: string, text: string): ImportRecord[] {
  const sf = parse(file, text);
  const bySpecifier = new Map<string, ImportRecord>();
  walk(sf, (node) => {
    const rec = importOf(node);
    if (rec === undefined) return;
    const full: ImportRecord = { ...(rec ?? { specifier: '', kind: 'dynamic', typeOnly: false }), line: lineOf(sf, node) };
    const seen = bySpecifier.get(full.specifier);
    if (seen) seen.typeOnly &&= full.typeOnly;
    else bySpecifier.set(full.specifier, full);
  });
  for (const f of ts.preProcessFile(text, true, true).importedFiles) {
    if (!bySpecifier.has(f.fileName)) bySpecifier.set(f.fileName, { specifier: f.fileName, kind: 'other', typeOnly: false, line: 0 });
  }
  return [...bySpecifier.values()];
}

function listTs(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const rel = prefix + d.name;
    if (d.isDirectory()) return listTs(join(dir, d.name), rel + '/');
    return d.isFile() && d.name.endsWith('.ts') ? [rel] : [];
  });
}

/** The src-relative .ts file a relative specifier names: `./x.js` → x.ts, `./x.ts`, `./dir` → dir/index.ts. */
function resolveRelative(from: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  const base = posix.normalize(posix.join(posix.dirname(from), specifier));
  if (base.startsWith('../') || base === '..') return undefined;
  const candidates = [base.replace(/\.js$/, '.ts'), base.endsWith('.ts') ? base : `${base}.ts`, posix.join(base, 'index.ts')];
  return candidates.find((c) => files.has(c));
}

/** Reads every .ts file under srcDir and resolves its imports; unresolvable relative imports are violations. */
export function buildGraph(srcDir: string): Graph {
  const files = listTs(srcDir).sort();
  const fileSet = new Set(files);
  const edges: Edge[] = [];
  const violations: string[] = [];
  for (const from of files) {
    for (const rec of collectImports(from, readFileSync(join(srcDir, from), 'utf8'))) {
      if (rec.specifier === '') {
        violations.push(`${from}:${rec.line} has a dynamic import() with a computed specifier (cannot be checked)`);
      } else if (!rec.specifier.startsWith('.')) {
        edges.push({ ...rec, from, to: rec.specifier, external: true });
      } else {
        const to = resolveRelative(from, rec.specifier, fileSet);
        if (to === undefined) violations.push(`${from}:${rec.line} imports '${rec.specifier}', which resolves to no .ts file under src/`);
        else edges.push({ ...rec, from, to, external: false });
      }
    }
  }
  return { files, edges, violations };
}

/** `hono/jsx` → `hono`, `@hono/node-server/x` → `@hono/node-server`. */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

export interface Cycle {
  /** Every file of the strongly connected component, sorted. */
  files: string[];
  /** One shortest cycle through its first file, ending where it starts. */
  example: string[];
}

/** Every file-level import cycle (strongly connected component, type-only edges included), Tarjan's algorithm. */
export function findCycles(files: readonly string[], edges: readonly Edge[]): Cycle[] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) if (!e.external) next.get(e.from)?.push(e.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      scc.push(w);
      if (w === v) break;
    }
    if (scc.length > 1 || next.get(v)!.includes(v)) cycles.push(scc.sort());
  };
  for (const f of files) if (!index.has(f)) connect(f);
  return cycles.map((scc) => ({ files: scc, example: examplePath(scc, next) }));
}

/** The shortest cycle through the first file of an SCC, as a path that ends where it starts. */
function examplePath(scc: string[], next: ReadonlyMap<string, string[]>): string[] {
  const start = scc[0]!;
  const inScc = new Set(scc);
  const parent = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of next.get(v) ?? []) {
      if (w === start) {
        const path = [start];
        for (let u: string | undefined = v; u !== undefined && u !== start; u = parent.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (inScc.has(w) && !parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return [...scc, start];
}

/** `const { env } = process` (or `{ env: e }`). */
const bindsEnv = (pattern: ts.ObjectBindingPattern): boolean => pattern.elements.some((el) => ((el.propertyName ?? el.name) as ts.Node).getText() === 'env');

/** Default exports and `process.env` reads outside the entry point, found in the AST (comments do not count). */
function sourceRuleViolations(rel: string, text: string): string[] {
  const sf = parse(rel, text);
  const out: string[] = [];
  const isProcess = (e: ts.Expression): boolean =>
    (ts.isIdentifier(e) && e.text === 'process') || (ts.isPropertyAccessExpression(e) && e.name.text === 'process');
  walk(sf, (node) => {
    const hasDefault = ts.canHaveModifiers(node) && ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
    const defaultSpecifier = ts.isExportSpecifier(node) && node.name.text === 'default';
    if ((ts.isExportAssignment(node) || hasDefault || defaultSpecifier) && !EDGE_ENTRIES.includes(rel))
      out.push(`${rel}:${lineOf(sf, node)} has a default export (named exports only; a Worker entry's is its contract)`);
    const envAccess =
      (ts.isPropertyAccessExpression(node) && node.name.text === 'env' && isProcess(node.expression)) ||
      (ts.isElementAccessExpression(node) &&
        ts.isStringLiteralLike(node.argumentExpression) &&
        node.argumentExpression.text === 'env' &&
        isProcess(node.expression)) ||
      (ts.isVariableDeclaration(node) &&
        ts.isObjectBindingPattern(node.name) &&
        node.initializer !== undefined &&
        isProcess(node.initializer) &&
        bindsEnv(node.name));
    if (envAccess && !ENV_READERS(rel)) out.push(`${rel}:${lineOf(sf, node)} reads process.env (only main.ts and demo/** may)`);
  });
  return out;
}

/** Builds the graph of srcDir and checks every rule: modules, layering, packages, cycles, default exports, env. */
export function checkArchitecture(srcDir: string): ArchitectureReport {
  const graph = buildGraph(srcDir);
  const violations = [...graph.violations];
  for (const f of graph.files) if (classify(f) === undefined) violations.push(`${f} belongs to no module (add it to the classification)`);
  for (const e of graph.edges) {
    const from = classify(e.from);
    if (from === undefined) continue;
    const note = e.typeOnly ? ' [type-only]' : '';
    if (e.external) {
      const rule = PACKAGE_RULES.find((r) => r.matches(packageOf(e.to)));
      if (rule && !rule.only.includes(from))
        violations.push(`${e.from} imports '${e.to}' (${rule.name} only from ${rule.only.join(', ')}; not from ${from})${note}`);
      continue;
    }
    const to = classify(e.to);
    if (to === undefined || to === from) continue;
    if (!ALLOWED[from].includes(to)) violations.push(`${e.from} imports ${e.to} (${from} → ${to} is not allowed)${note}`);
    else if (FORBIDDEN_FILES[from]?.includes(e.to)) violations.push(`${e.from} imports ${e.to} (${from} → ${e.to} is not allowed)${note}`);
  }
  for (const c of findCycles(graph.files, graph.edges)) {
    const all = c.example.length - 1 === c.files.length ? '' : ` (all ${c.files.length} files of the cycle: ${c.files.join(', ')})`;
    violations.push(`import cycle: ${c.example.join(' → ')}${all}`);
  }
  for (const f of graph.files) violations.push(...sourceRuleViolations(f, readFileSync(join(srcDir, f), 'utf8')));
  violations.push(...edgePathViolations(graph));
  const edges = new Set(graph.edges.filter((e) => !e.external).map((e) => `${e.from}\0${e.to}`)).size;
  return { files: graph.files, edges, violations };
}

/**
 * What each edge entry reaches at run time (type-only imports are erased) must not import Node: one
 * line per file that does, with the path from the entry to it.
 */
function edgePathViolations(graph: Graph): string[] {
  const out: string[] = [];
  for (const entry of EDGE_ENTRIES.filter((e) => graph.files.includes(e))) {
    const via = new Map<string, string>([[entry, entry]]);
    const queue = [entry];
    while (queue.length) {
      const file = queue.shift()!;
      for (const e of graph.edges) {
        if (e.from !== file || e.typeOnly) continue;
        if (e.external) {
          if (NODE_ONLY(e.to)) out.push(`${entry} reaches ${via.get(file)}, which imports '${e.to}' (the edge handler runs without Node)`);
        } else if (!via.has(e.to)) {
          via.set(e.to, `${via.get(file)} → ${e.to}`);
          queue.push(e.to);
        }
      }
    }
  }
  return out;
}
