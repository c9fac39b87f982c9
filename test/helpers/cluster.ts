/**
 * Several in-process gateways on the tests' Redis, as one cluster: each on its own port, reachable by
 * the others at that port (its internal URL), all with the same requestState keys and cluster secret.
 */
import { afterAll, beforeAll } from 'vitest';
import { randomStateKey } from '../../src/protocol/request-state.js';
import { startGateway, stdioFixture, type RunningGateway } from './gateway.js';
import { freePort } from './processes.js';
import { REDIS_URL, redisPrefix } from './redis.js';

export interface ClusterOptions {
  /** The Redis key prefix of this cluster (`redisPrefix()`). */
  readonly prefix: string;
  readonly mcpServers: Record<string, unknown>;
  /** More of the `gateway` section (cluster and coalesceMs: 0 are set here). */
  readonly gateway?: Record<string, unknown>;
  readonly heartbeatMs?: number;
  /** The internal URL an instance gives the others (default: its own port on 127.0.0.1). */
  readonly internalUrl?: (instanceId: string, port: number) => string;
  /** What an instance is given besides its config (a logger or metrics a test reads). */
  readonly deps?: (instanceId: string) => Omit<Parameters<typeof startGateway>[1] & object, 'stateKeys' | 'port' | 'clusterSecret'>;
}

/** Starts one gateway per id, in order; the caller closes them. */
export async function startCluster(ids: readonly string[], opts: ClusterOptions): Promise<RunningGateway[]> {
  const stateKeys = [await randomStateKey()];
  const clusterSecret = `cluster-secret-${opts.prefix}`;
  const started: RunningGateway[] = [];
  for (const instanceId of ids) {
    const port = await freePort();
    const cluster = {
      redis: REDIS_URL,
      keyPrefix: opts.prefix,
      instanceId,
      heartbeatMs: opts.heartbeatMs ?? 200,
      internalUrl: opts.internalUrl?.(instanceId, port) ?? `http://127.0.0.1:${port}`,
    };
    const file = { mcpServers: opts.mcpServers, gateway: { coalesceMs: 0, ...opts.gateway, cluster } };
    started.push(await startGateway(file, { ...opts.deps?.(instanceId), stateKeys, port, clusterSecret }));
  }
  return started;
}

/**
 * Two instances `a` and `b` of a cluster on a fresh key prefix, in front of the legacy stdio fixture
 * (with `gateway` as more of their `gateway` section): started before the file's tests, closed and
 * their Redis keys removed after. The instances are read from the returned object once started; its
 * `prefix` is their Redis key prefix.
 */
export function twoInstances(gateway: Record<string, unknown>): { a: RunningGateway; b: RunningGateway; readonly prefix: string } {
  const { prefix, cleanup } = redisPrefix();
  const pair = { prefix } as { a: RunningGateway; b: RunningGateway; readonly prefix: string };
  beforeAll(async () => {
    [pair.a, pair.b] = (await startCluster(['a', 'b'], { prefix, mcpServers: { legacy: stdioFixture() }, gateway })) as [RunningGateway, RunningGateway];
  });
  afterAll(async () => {
    await pair.a?.close();
    await pair.b?.close();
    await cleanup();
  });
  return pair;
}
