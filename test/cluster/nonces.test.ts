import { describe, expect, it } from 'vitest';
import { InMemoryNonces } from '../../src/cluster/nonces.js';

describe('InMemoryNonces', () => {
  it('accepts a nonce once within its ttl, again after it, and forgets expired ones', async () => {
    let now = 1_000;
    const nonces = new InMemoryNonces(() => now);
    expect(nonces.accept('a', 100)).toBe(true);
    expect(nonces.accept('a', 100)).toBe(false);
    expect(nonces.accept('b', 100)).toBe(true);
    now += 101;
    expect(nonces.accept('c', 100)).toBe(true); // sweeps a and b
    expect(nonces.size).toBe(1);
    expect(nonces.accept('a', 100)).toBe(true);
  });
});
