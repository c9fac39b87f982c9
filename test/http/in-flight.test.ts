/** The bound of requests in flight (http/in-flight.ts). */
import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/http/in-flight.js';

describe('InFlight', () => {
  it('says whose bound refuses, and gives a slot back once however often it is released', () => {
    const inFlight = new InFlight(2, 3);
    const a1 = inFlight.take('alice');
    const a2 = inFlight.take('alice');
    expect(inFlight.take('alice')).toEqual({ ok: false, whose: 'principal' });
    const b1 = inFlight.take('bob');
    expect(inFlight.take('bob')).toEqual({ ok: false, whose: 'total' });
    expect([a1.ok, a2.ok, b1.ok]).toEqual([true, true, true]);
    if (!a1.ok) throw new Error('taken');
    a1.release();
    a1.release();
    expect(inFlight.total).toBe(2);
    expect(inFlight.take('alice').ok).toBe(true);
    expect(inFlight.take('carol')).toEqual({ ok: false, whose: 'total' });
  });
});
