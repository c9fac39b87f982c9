/**
 * The edge handler (issue 31): an MRTR round through the edge in workerd (miniflare, the built bundle)
 * in front of a session core (the gateway, tuned config, the bench's stdio backend), against the same
 * round sent straight to the core. CPU per round is the core's, plus workerd's on the edge row.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEdgeWorker, type EdgeWorker } from '../scripts/edge-run.mjs';
import { fetchRound } from './clients.js';
import { descendants } from './measure.js';
import { BEST_CONFIG, startGateway } from './procs.js';
import { measureRounds } from './rounds.js';

export const EDGE_ROUND = 'ask round: through the edge handler in workerd, or straight to the core';
export const EDGE_ROW = 'edge + core';
export const CORE_ROW = 'core, straight';

/** The workerd process miniflare started for this bench (a descendant of this process). */
function workerdPid(): number | undefined {
  return descendants(process.pid).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('workerd');
    } catch {
      return false;
    }
  });
}

export async function edgeRound(): Promise<void> {
  const core = await startGateway(BEST_CONFIG, { LOG_LEVEL: 'warn' });
  const dir = mkdtempSync(join(tmpdir(), 'bench-edge-'));
  let edge: EdgeWorker | undefined;
  try {
    edge = await startEdgeWorker(dir, {
      MCP_GATEWAY_STATE_KEYS: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url'),
      MCP_GATEWAY_CONFIG: { mcpServers: { core: { url: core.url, protocol: '2026-07-28' } }, gateway: { cacheTtlMs: 3_600_000, coalesceMs: 0 } },
    });
    const edgeUrl = edge.url;
    const edgePid = workerdPid();
    await measureRounds(
      {
        [CORE_ROW]: { client: 'fetch', call: fetchRound(core.url), watch: { sut: [core.pid] } },
        [EDGE_ROW]: { client: 'fetch', call: fetchRound(edgeUrl), watch: { sut: edgePid === undefined ? [core.pid] : [core.pid, edgePid] } },
      },
      EDGE_ROUND,
    );
  } finally {
    await edge?.close();
    await core.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
