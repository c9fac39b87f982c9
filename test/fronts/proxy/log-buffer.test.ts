import { describe, expect, it } from 'vitest';
import { LogBuffer } from '../../../src/fronts/proxy/log-buffer.js';

describe('LogBuffer', () => {
  it('keeps the newest lines, oldest first, and counts what rotated out', () => {
    const logs = new LogBuffer(3);
    for (let i = 1; i <= 5; i++) logs.push('a', 'info', { data: `line ${i}` }, Date.UTC(2026, 0, 1, 0, 0, i));
    expect(logs.size).toBe(3);
    expect(logs.dropped).toBe(2);
    expect(logs.read().map((e) => e.data)).toEqual(['line 3', 'line 4', 'line 5']);
    expect(logs.read()[0]!.timestamp).toBe('2026-01-01T00:00:03.000Z');
  });

  it('filters by server and minimum level, then keeps the newest `limit`', () => {
    const logs = new LogBuffer(10);
    logs.push('a', 'debug', { data: 1 });
    logs.push('b', 'error', { data: 2, logger: 'db' });
    logs.push('a', 'warning', { data: 3 });
    logs.push('a', 'critical', { data: 4 });
    expect(logs.read({ server: 'a' }).map((e) => e.data)).toEqual([1, 3, 4]);
    expect(logs.read({ level: 'warning' }).map((e) => e.data)).toEqual([2, 3, 4]);
    expect(logs.read({ level: 'warning', limit: 2 }).map((e) => e.data)).toEqual([3, 4]);
    expect(logs.read({ limit: 0 })).toEqual([]);
    expect(logs.read({ server: 'b' })[0]).toMatchObject({ server: 'b', level: 'error', logger: 'db', data: 2 });
  });
});
