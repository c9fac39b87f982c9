import { describe, expect, it } from 'vitest';
import { PoolCapacity } from '../../../src/core/backend/pool-capacity.js';

describe('PoolCapacity', () => {
  it('counts starts under way against the sessions that fit', () => {
    const capacity = new PoolCapacity(2);
    expect(capacity.fits(1)).toBe(true);
    capacity.startBegun();
    expect(capacity.fits(1)).toBe(false);
    expect(capacity.starting).toBe(1);
    capacity.startEnded();
    expect(capacity.fits(1)).toBe(true);
  });

  it('holds each group to its share and forgets a group that gave everything back', () => {
    const capacity = new PoolCapacity(8, 2);
    capacity.take('alice');
    capacity.take('alice');
    expect(capacity.atShare('alice')).toBe(true);
    expect(capacity.atShare('bob')).toBe(false);
    capacity.give('alice');
    expect(capacity.atShare('alice')).toBe(false);
    capacity.give('alice');
    capacity.give('alice'); // one too many: never negative
    capacity.take('alice');
    capacity.take('alice');
    expect(capacity.atShare('alice')).toBe(true);
  });
});
