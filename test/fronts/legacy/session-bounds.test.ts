/** The legacy sessions' fair shares, one module: room, the idle session closed to make room, sessions being opened counted. */
import { describe, expect, it } from 'vitest';
import { SessionBounds, refusal, roomFor } from '../../../src/fronts/legacy/session-bounds.js';

const session = (principal: string, lastUsed: number, idle = true) => ({ principal, lastUsed, idle: () => idle });
const LIMITS = { total: 4, perPrincipal: 2 };

describe('legacy session bounds', () => {
  it("makes room by closing the principal's least recently used idle session, never a busy one or another principal's", () => {
    const old = session('alice', 1);
    const open = [session('alice', 0, false), old, session('bob', -5)];
    expect(roomFor([session('alice', 1)], 'alice', { total: 0, own: 0 }, LIMITS)).toEqual({ kind: 'room' });
    expect(roomFor(open, 'alice', { total: 0, own: 0 }, LIMITS)).toEqual({ kind: 'evict', session: old, whose: 'principal' });
    expect(roomFor([session('alice', 0, false), session('alice', 1, false)], 'alice', { total: 0, own: 0 }, LIMITS)).toEqual({
      kind: 'refused',
      whose: 'principal',
    });
    const full = [session('bob', 0, false), session('bob', 1, false), session('carol', 2, false), session('carol', 3)];
    expect(roomFor(full, 'alice', { total: 0, own: 0 }, LIMITS)).toEqual({ kind: 'refused', whose: 'total' });
  });

  it('counts sessions being opened, so concurrent initializes cannot overshoot, until each reservation is done', () => {
    const bounds = new SessionBounds<ReturnType<typeof session>>(LIMITS);
    const first = bounds.reserve([], 'alice');
    const second = bounds.reserve([], 'alice');
    expect([first.kind, second.kind]).toEqual(['reserved', 'reserved']);
    expect(bounds.reserve([], 'alice')).toEqual({ kind: 'refused', whose: 'principal' });
    if (first.kind !== 'reserved') throw new Error('unreachable');
    first.done();
    first.done(); // once
    expect(bounds.reserve([], 'alice').kind).toBe('reserved');
    expect(bounds.reserve([], 'alice')).toEqual({ kind: 'refused', whose: 'principal' });
  });

  it('answers 429 principal_limit (no Retry-After) or 503 total_limit with Retry-After, naming the config key', async () => {
    const own = refusal('principal', LIMITS);
    expect(own.status).toBe(429);
    expect(own.headers.get('retry-after')).toBeNull();
    expect(await own.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, data: { reason: 'principal_limit', limit: 'gateway.maxLegacySessionsPerPrincipal', max: 2 } },
    });
    const all = refusal('total', LIMITS);
    expect(all.status).toBe(503);
    expect(all.headers.get('retry-after')).toBe('1');
    expect(await all.json()).toMatchObject({ error: { code: -32000, data: { reason: 'total_limit', limit: 'gateway.maxLegacySessions', max: 4 } } });
  });
});
