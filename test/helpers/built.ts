/**
 * The processes tests start (fixture servers, the CLI) run as plain JavaScript: test/global-setup.ts
 * transpiles `src/` and the fixtures once per run into `.built/`, the same tree (esbuild, no bundling:
 * each module keeps its own `import.meta.url`, its relative imports and its main-module check). That
 * spares each start tsx's loader (the legacy fixture: 0.6 CPU-s to its first answer, 1.3 under tsx),
 * over 200 starts a run. A test file run without the global setup (no `.built/` copy) starts them under
 * tsx as before.
 */
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BUILT = join(ROOT, '.built');

/** What to put after `node` to run the TypeScript module `ts`: its built copy, or `ts` under tsx. */
export function nodeArgs(ts: string): string[] {
  const js = join(BUILT, relative(ROOT, ts)).replace(/\.ts$/, '.js');
  return existsSync(js) ? [js] : ['--import', 'tsx', ts];
}
