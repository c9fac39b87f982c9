/**
 * A start-up step that fails after the gateway joined the cluster unwinds what was built: the instance
 * leaves again (a real Redis), so the others never count a gateway that never served.
 */
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createGateway } from '../../src/gateway.js';
import { randomStateKey } from '../../src/protocol/request-state.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';

describe('createGateway start-up', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  it('leaves the cluster again when a later step fails', async () => {
    const { prefix, cleanup } = redisPrefix();
    cleanups.push(cleanup);
    const parsed = parseConfig({
      mcpServers: { remote: { url: 'http://127.0.0.1:9/mcp' } },
      gateway: { cluster: { redis: REDIS_URL, keyPrefix: prefix, instanceId: 'never-served', internalUrl: 'http://127.0.0.1:9/' } },
    });
    if (!parsed.ok) throw new Error(parsed.error.join('\n'));
    const client = createClient({ url: REDIS_URL });
    await client.connect();
    cleanups.push(async () => void (await client.close()));
    const members = (): Promise<string[]> => client.zRange(`${prefix}instances`, 0, -1);
    // A start that succeeds is a member until it closes (the key read here is the right one).
    const served = await createGateway(parsed.value, { stateKeys: [await randomStateKey()] });
    expect(await members()).toContain('never-served');
    await served.close();
    expect(await members()).not.toContain('never-served');
    // No requestState key: the codec refuses, after the instance has joined.
    await expect(createGateway(parsed.value, { stateKeys: [] })).rejects.toThrow('at least one key');
    expect(await members()).not.toContain('never-served');
  });
});
