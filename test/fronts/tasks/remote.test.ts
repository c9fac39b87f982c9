import { describe, expect, it } from 'vitest';
import { createRemoteTaskIds } from '../../../src/fronts/tasks/remote.js';
import { createAsyncCompactJwe } from '../../../src/protocol/compact-jwe.js';
import { createWebCompactJwe } from '../../../src/protocol/compact-jwe-web.js';
import { randomStateKey, type StateKey } from '../../../src/protocol/request-state.js';

const nodeIds = (keys: StateKey[]) => createRemoteTaskIds(createAsyncCompactJwe(keys));

/**
 * The id with one character of its tag changed. The third character from the end carries six bits
 * of the tag, all of them data; the last may carry spare bits (a base64url tail's), so setting the
 * last two to `AA` left one id in about 300 the same (when the one before was `A` already).
 */
const tampered = (id: string): string => `${id.slice(0, -3)}${id.at(-3) === 'A' ? 'B' : 'A'}${id.slice(-2)}`;

describe('wrapped ids of backend tasks', () => {
  it('route back to the backend for the creating principal only, and refuse tampering and other keys', async () => {
    const key = await randomStateKey();
    const ids = nodeIds([key]);
    const id = await ids.wrap('modern', 'bt-1', 'alice');
    expect(ids.isRemote(id)).toBe(true);
    expect(id).not.toContain('bt-1');
    expect(await ids.unwrap(id, 'alice')).toEqual({ backend: 'modern', taskId: 'bt-1' });
    expect(await ids.unwrap(id, 'bob')).toBeUndefined();
    expect(await ids.unwrap(tampered(id), 'alice')).toBeUndefined();
    expect(await ids.unwrap('r~garbage', 'alice')).toBeUndefined();
    expect(await ids.unwrap('gw~local', 'alice')).toBeUndefined();
    expect(await nodeIds([await randomStateKey()]).unwrap(id, 'alice')).toBeUndefined();
    // Rotation: an id sealed under an older key still opens while that key is configured.
    expect(await nodeIds([await randomStateKey(), key]).unwrap(id, 'alice')).toEqual({ backend: 'modern', taskId: 'bt-1' });
  });

  it('are the same ids on Web Crypto (the edge handler): each runtime opens the ids of the other', async () => {
    const key = await randomStateKey();
    const web = createRemoteTaskIds(await createWebCompactJwe([key]));
    const node = nodeIds([key]);
    expect(await web.unwrap(await node.wrap('modern', 'bt-2', 'alice'), 'alice')).toEqual({ backend: 'modern', taskId: 'bt-2' });
    expect(await node.unwrap(await web.wrap('modern', 'bt-3', 'alice'), 'alice')).toEqual({ backend: 'modern', taskId: 'bt-3' });
    expect(await web.unwrap(await node.wrap('modern', 'bt-2', 'alice'), 'bob')).toBeUndefined();
  });
});
