/**
 * Builds the edge handler (src/edge/worker.ts) into one Worker module, its dependencies inside:
 * `node scripts/edge-bundle.mjs [outfile]` (default dist/edge-worker.js; `npm run build:edge`). The
 * platform is neutral with the conditions workerd reads, so an import of a Node builtin fails the build
 * rather than the first request. Tests bundle through `bundleEdge` into a folder of their own.
 */
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Bundles the edge handler into `outfile`; resolves to the bundle's size in bytes. */
export async function bundleEdge(outfile = join(ROOT, 'dist', 'edge-worker.js')) {
  const result = await build({
    entryPoints: [join(ROOT, 'src', 'edge', 'worker.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'browser'],
    target: 'es2022',
    metafile: true,
    logLevel: 'warning',
  });
  return Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  const bytes = await bundleEdge(out);
  console.log(`edge handler: ${out ?? 'dist/edge-worker.js'} (${(bytes / 1024).toFixed(0)} KiB)`);
}
