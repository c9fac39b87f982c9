import { describe, expect, it } from 'vitest';
import { createRemoteTaskIds } from '../../../src/fronts/tasks/remote.js';
import { randomStateKey } from '../../../src/protocol/request-state.js';

describe('wrapped ids of backend tasks', () => {
  it('route back to the backend for the creating principal only, and refuse tampering and other keys', async () => {
    const key = await randomStateKey();
    const ids = createRemoteTaskIds([key]);
    const id = ids.wrap('modern', 'bt-1', 'alice');
    expect(ids.isRemote(id)).toBe(true);
    expect(id).not.toContain('bt-1');
    expect(ids.unwrap(id, 'alice')).toEqual({ backend: 'modern', taskId: 'bt-1' });
    expect(ids.unwrap(id, 'bob')).toBeUndefined();
    expect(ids.unwrap(`${id.slice(0, -2)}AA`, 'alice')).toBeUndefined();
    expect(ids.unwrap('r~garbage', 'alice')).toBeUndefined();
    expect(ids.unwrap('gw~local', 'alice')).toBeUndefined();
    expect(createRemoteTaskIds([await randomStateKey()]).unwrap(id, 'alice')).toBeUndefined();
    // Rotation: an id sealed under an older key still opens while that key is configured.
    expect(createRemoteTaskIds([await randomStateKey(), key]).unwrap(id, 'alice')).toEqual({ backend: 'modern', taskId: 'bt-1' });
  });
});
