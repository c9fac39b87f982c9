/**
 * The edge handler run locally: bundled (edge-bundle.mjs) into `dir` and started in workerd through
 * miniflare (whose npm package ships the runtime) on 127.0.0.1, configured by `bindings` as a Worker's
 * `env` is. For the tests, the conformance run and the bench.
 */
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { bundleEdge } from './edge-bundle.mjs';

/** Starts one edge instance; `bundle: false` reuses a bundle already in `dir`. Resolves to its `/mcp` URL and a stop. */
export async function startEdgeWorker(dir, bindings, { port, bundle = true } = {}) {
  if (bundle) await bundleEdge(join(dir, 'worker.js'));
  const mf = new Miniflare({
    ...(port !== undefined ? { port } : {}),
    modules: true,
    scriptPath: join(dir, 'worker.js'),
    modulesRoot: dir,
    compatibilityDate: '2025-09-01',
    bindings: { LOG_LEVEL: 'warn', ...bindings },
  });
  const base = await mf.ready;
  return { url: new URL('/mcp', base).toString(), port: Number(base.port), close: () => mf.dispose() };
}
