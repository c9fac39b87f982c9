import { describe, expect, it } from 'vitest';
import { newId } from '../../src/util/ids.js';

describe('newId', () => {
  it('makes distinct ULIDs whose letters are spread evenly over the alphabet', () => {
    const ids = Array.from({ length: 8_000 }, () => newId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    // 8,000 ids × 16 random letters: each of the 32 letters is expected 4,000 times.
    const counts = new Map<string, number>();
    for (const id of ids) for (const ch of id.slice(10)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(32);
    for (const n of counts.values()) expect(Math.abs(n - 4_000)).toBeLessThan(400);
  });

  it('starts with the current time', () => {
    const before = Date.now();
    const id = newId();
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const ms = [...id.slice(0, 10)].reduce((n, ch) => n * 32 + alphabet.indexOf(ch), 0);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now());
  });
});
