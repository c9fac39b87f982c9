/**
 * The edge handler for the conformance run, in workerd, configured by bindings as an operator would,
 * with the gateway at `coreUrl` as its only backend (its session core). Its requestState key is made for
 * this run; the suite reaches it as `localhost` (its DNS-rebinding scenario checks the Host).
 */
import { randomBytes } from 'node:crypto';
import { startEdgeWorker as startWorker } from '../../scripts/edge-run.mjs';

export async function startEdgeWorker(dir: string, coreUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const edge = await startWorker(dir, {
    MCP_GATEWAY_STATE_KEYS: randomBytes(32).toString('base64url'),
    MCP_GATEWAY_CONFIG: { mcpServers: { core: { url: coreUrl, protocol: '2026-07-28' } } },
  });
  return { url: `http://localhost:${edge.port}/mcp`, close: () => edge.close() };
}
