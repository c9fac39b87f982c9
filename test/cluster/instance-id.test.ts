/** Instance ids: configured, kept in the state directory, or made for a cluster process. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SINGLE_INSTANCE_ID, resolveInstanceId } from '../../src/cluster/instance-id.js';

describe('resolveInstanceId', () => {
  it('takes the configured id, else the one kept in stateDir, else a fresh one per start in a cluster, else `single`', async () => {
    expect(await resolveInstanceId({ configured: 'a', cluster: true })).toBe('a');
    const dir = mkdtempSync(join(tmpdir(), 'instance-id-'));
    try {
      const kept = await resolveInstanceId({ stateDir: dir, cluster: true });
      expect(await resolveInstanceId({ stateDir: dir })).toBe(kept);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const first = await resolveInstanceId({ cluster: true });
    const second = await resolveInstanceId({ cluster: true });
    expect(first).toMatch(/^[0-9A-Z]{26}$/);
    expect(second).not.toBe(first);
    expect(await resolveInstanceId({})).toBe(SINGLE_INSTANCE_ID);
  });
});
