/**
 * The edge handler for the conformance run: bundled (scripts/edge-bundle.mjs) into `dir` and run in
 * workerd (miniflare) on 127.0.0.1, configured by bindings as an operator would, with the gateway at
 * `coreUrl` as its only backend (its session core). Its requestState key is made for this run.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { bundleEdge } from '../../scripts/edge-bundle.mjs';

export async function startEdgeWorker(dir: string, coreUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  await bundleEdge(join(dir, 'worker.js'));
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(dir, 'worker.js'),
    modulesRoot: dir,
    compatibilityDate: '2025-09-01',
    bindings: {
      LOG_LEVEL: 'warn',
      MCP_GATEWAY_STATE_KEYS: randomBytes(32).toString('base64url'),
      MCP_GATEWAY_CONFIG: { mcpServers: { core: { url: coreUrl, protocol: '2026-07-28' } } },
    },
  });
  const base = await mf.ready;
  return { url: `http://localhost:${base.port}/mcp`, close: () => mf.dispose() };
}
