/** Ids that name their owner (task and legacy session ids). */
import { describe, expect, it } from 'vitest';
import { ownedId, ownerOfId } from '../../src/cluster/owned-ids.js';

describe('owned ids', () => {
  it('name their owner; other ids name none', () => {
    expect(ownerOfId(ownedId('gw-1', 'abc'))).toBe('gw-1');
    expect(ownerOfId('gw-1.a~b~c')).toBe('gw-1.a~b');
    expect(ownerOfId('plain-uuid')).toBeUndefined();
    expect(ownerOfId('~leading')).toBeUndefined();
  });
});
