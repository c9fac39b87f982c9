/**
 * The MRTR front's parking on its in-memory quotas and a manual clock: the
 * parked-call quotas and their return, expiry, one claim per round, and what the retry of a call that
 * ended while parked (or a replay of a round answered before it ended) is told.
 */
import { describe, expect, it } from 'vitest';
import { InMemoryQuotas, type QuotaCounter } from '../../../src/cluster/quotas.js';
import type { BackendOutcome } from '../../../src/core/backend/port.js';
import { Call } from '../../../src/core/calls/call.js';
import { GatewayError } from '../../../src/errors.js';
import { Parking, type ParkingOptions } from '../../../src/fronts/mrtr/parking.js';
import { createDeferred, type Deferred } from '../../../src/util/deferred.js';
import { ManualClock } from '../../helpers/manual-clock.js';

const TTL = 1_000;
const settle = () => new Promise((r) => setTimeout(r, 0));

let ids = 0;
/** A call whose backend asks for one elicitation; `finish` ends it as the backend would, `withdraw` takes the request back. */
function asking(principal = 'alice') {
  const call = new Call({ id: `c${++ids}`, principal, method: 'tools/call', backend: 'b', caps: { elicitation: { form: {} } } });
  const finish = createDeferred<BackendOutcome>();
  const asked = new AbortController();
  call.run(() => finish.promise);
  call.requestInput('elicitation/create', { message: 'name?', requestedSchema: { type: 'object', properties: {} } }, asked.signal).catch(() => undefined);
  return { call, finish, withdraw: () => asked.abort(new Error('the backend gave up')) };
}

function setup(opts: Partial<ParkingOptions> = {}) {
  const quotas = new InMemoryQuotas();
  const clock = new ManualClock();
  const parking = new Parking({ quotas, clock, maxParkedPerPrincipal: 2, maxParkedTotal: 3, rememberMs: 5_000, ...opts });
  return { quotas, clock, parking, held: (key: string) => quotas.count(key) };
}

const complete: BackendOutcome = { kind: 'complete', result: { content: [{ type: 'text', text: 'done' }] } };

/** A call parked in round 1, that round claimed by its retry, then finished by its backend. */
async function answeredThenEnded(parking: Parking): Promise<Call> {
  const { call, finish } = asking();
  await parking.park(call, TTL);
  expect(parking.claim(call, 1)).toBe(true);
  finish.resolve(complete);
  await settle();
  return call;
}

describe('Parking', () => {
  it('takes one unit of each parked-call quota at the first input round only, and gives them back when the call ends', async () => {
    const { parking, held } = setup();
    const { call, finish } = asking();
    parking.bookOf(call);
    expect(await parking.park(call, TTL)).toBe(1);
    expect(parking.claim(call, 1)).toBe(true);
    expect(await parking.park(call, TTL)).toBe(2);
    expect(parking.bookOf(call).round).toBe(2);
    expect([held('parked:alice'), held('parked:*')]).toEqual([1, 1]);
    finish.resolve(complete);
    await settle();
    expect([held('parked:alice'), held('parked:*')]).toEqual([0, 0]);
    expect(parking.size).toBe(0);
  });

  it('refuses a park over the per-principal bound with parked_call_limit and cancels that call', async () => {
    const { parking, held } = setup({ maxParkedPerPrincipal: 1 });
    const first = asking();
    const second = asking();
    await parking.park(first.call, TTL);
    await expect(parking.park(second.call, TTL)).rejects.toMatchObject({ code: 'parked_call_limit' });
    expect(second.call.outcome).toMatchObject({ kind: 'error', error: { code: 'parked_call_limit' } });
    expect(first.call.done).toBe(false);
    expect(held('parked:alice')).toBe(1);
  });

  it('cancels a parked call nobody retries within its ttl, on the clock', async () => {
    const { parking, clock, held } = setup();
    const { call } = asking();
    await parking.park(call, TTL);
    clock.advance(TTL - 1);
    expect(call.done).toBe(false);
    clock.advance(1);
    expect(call.outcome).toMatchObject({ kind: 'error', error: { code: 'cancelled', message: expect.stringMatching(/nobody answered in time/) } });
    await settle();
    expect(held('parked:*')).toBe(0);
  });

  it("keeps one expiry per call: its latest round's", async () => {
    const { parking, clock } = setup();
    const { call } = asking();
    await parking.park(call, TTL);
    await parking.park(call, TTL * 3);
    clock.advance(TTL * 2);
    expect(call.done).toBe(false);
    clock.advance(TTL);
    expect(call.done).toBe(true);
  });

  it('lets the retry of the parked round claim it once, which stops its expiry', async () => {
    const { parking, clock } = setup();
    const { call } = asking();
    await parking.park(call, TTL);
    expect(parking.claim(call, 2)).toBe(false); // not the round it is parked in
    expect(parking.claim(call, 1)).toBe(true);
    expect(parking.claim(call, 1)).toBe(false); // a second retry of the same round is stale
    clock.advance(TTL * 10);
    expect(call.done).toBe(false);
  });

  it('refuses a claim of a round the call is not parked in: before it parks, once claimed, and an older round', async () => {
    const { parking } = setup();
    const { call } = asking();
    parking.bookOf(call);
    expect(parking.claim(call, 0)).toBe(false); // never parked: nothing to claim
    await parking.park(call, TTL);
    expect(parking.claim(call, 1)).toBe(true);
    expect(parking.claim(call, 1)).toBe(false); // claimed, and not parked again yet
    await parking.park(call, TTL);
    expect(parking.claim(call, 1)).toBe(false); // an older round
    expect(parking.claim(call, 2)).toBe(true);
  });

  it('gives the units back when the call becomes a task, and not a second time when it ends', async () => {
    const { parking, held } = setup();
    const other = asking();
    await parking.park(other.call, TTL);
    const { call, finish } = asking();
    await parking.park(call, TTL);
    expect(held('parked:alice')).toBe(2);
    await parking.release(call);
    expect(held('parked:alice')).toBe(1);
    finish.resolve(complete);
    await settle();
    expect(held('parked:alice')).toBe(1); // the other call's unit stays
  });

  it('holds nothing when the call ends while its quota is being taken', async () => {
    const quotas = new InMemoryQuotas();
    const gate: Deferred<void> = createDeferred();
    const slow = {
      acquire: async (counters: readonly QuotaCounter[]) => {
        await gate.promise;
        return quotas.acquire(counters);
      },
      release: (keys: readonly string[]) => quotas.release(keys),
    };
    const parking = new Parking({
      quotas: slow,
      clock: new ManualClock(),
      maxParkedPerPrincipal: 2,
      maxParkedTotal: 3,
      rememberMs: 5_000,
    });
    const { call, finish } = asking();
    parking.bookOf(call);
    const parked = parking.park(call, TTL);
    finish.resolve(complete);
    await settle();
    gate.resolve();
    expect(await parked).toBeUndefined();
    expect(quotas.count('parked:alice')).toBe(0);
    expect(parking.size).toBe(0);
  });

  it('gives the retry of the parked round what the backend finished with, once, and only to its principal', async () => {
    const { parking } = setup();
    const { call, finish } = asking();
    await parking.park(call, TTL);
    finish.resolve(complete); // with its request still outstanding: the backend went on without the answer
    await settle();
    expect(parking.ended(call.id, 'bob', 1)).toEqual({ kind: 'gone', why: undefined }); // another principal learns nothing
    expect(parking.ended(call.id, 'alice', 2)).toEqual({ kind: 'expired', backend: 'b' }); // not the round it ended in
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'finished', backend: 'b', outcome: { kind: 'done', outcome: complete } });
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'answered' }); // a replay: the answer went to the first
  });

  it('tells a replay of a round a retry answered, once the call has ended, that the round was answered; another principal nothing', async () => {
    const { parking, clock } = setup();
    const call = await answeredThenEnded(parking);
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'answered' });
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'answered' }); // every replay, not once
    expect(parking.ended(call.id, 'alice', 2)).toEqual({ kind: 'gone', why: undefined }); // a round it never had
    expect(parking.ended(call.id, 'bob', 1)).toEqual({ kind: 'gone', why: undefined });
    clock.advance(5_000); // rememberMs: forgotten
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'gone', why: undefined });
  });

  it('keeps what a retry is owed however many calls end after their rounds were answered', async () => {
    const { parking } = setup({ maxParkedTotal: 2, maxParkedPerPrincipal: 2 });
    const owed = asking();
    await parking.park(owed.call, TTL);
    owed.finish.resolve(complete); // finished on its own while parked: its retry gets this
    await settle();
    for (let i = 0; i < 5; i++) {
      const call = await answeredThenEnded(parking);
      expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'answered' });
    }
    expect(parking.ended(owed.call.id, 'alice', 1)).toMatchObject({ kind: 'finished' });
  });

  it('remembers nothing of a call that never parked', async () => {
    const { parking } = setup();
    const call = new Call({ id: 'plain', principal: 'alice', method: 'tools/call', backend: 'b', caps: {} });
    const finish = createDeferred<BackendOutcome>();
    call.run(() => finish.promise);
    parking.bookOf(call);
    finish.resolve(complete);
    await settle();
    expect(parking.ended(call.id, 'alice', 0)).toEqual({ kind: 'gone', why: undefined });
  });

  it('says the backend gave up when it withdrew its request and failed; another principal learns nothing', async () => {
    const { parking } = setup();
    const { call, finish, withdraw } = asking();
    await parking.park(call, TTL);
    withdraw();
    finish.reject(new Error('elicitation timed out'));
    await settle();
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'expired', backend: 'b' });
    expect(parking.ended(call.id, 'bob', 1)).toEqual({ kind: 'gone', why: undefined });
    expect(parking.ended(call.id, 'alice', 0)).toEqual({ kind: 'answered' }); // a round before the last: answered then
  });

  it('says why the call is gone, not that the backend gave up, when its request was lost with its session', async () => {
    const { parking } = setup();
    const call = new Call({ id: 'lost', principal: 'alice', method: 'tools/call', backend: 'b', caps: { elicitation: { form: {} } } });
    const finish = createDeferred<BackendOutcome>();
    const asked = new AbortController();
    call.run(() => finish.promise);
    call.requestInput('elicitation/create', { message: 'name?', requestedSchema: { type: 'object', properties: {} } }, asked.signal).catch(() => undefined);
    await parking.park(call, TTL);
    const closed = new GatewayError('backend_closed', 'b');
    asked.abort(closed); // the backend's process died: its session closed under the request
    finish.reject(closed);
    await settle();
    expect(call.withdrawn).toBe(0);
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'gone', why: expect.stringMatching(/ended while it waited/) });
  });

  it('remembers an ended call for rememberMs and keeps at most maxParkedTotal of them, oldest first out', async () => {
    const { parking, clock } = setup({ maxParkedTotal: 2, maxParkedPerPrincipal: 2 });
    const failed = [asking(), asking(), asking()];
    for (const [i, { call, finish }] of failed.entries()) {
      await parking.park(call, TTL);
      finish.reject(new GatewayError('backend_closed', `b${i}`));
      await settle();
    }
    expect(parking.ended(failed[0]!.call.id, 'alice', 1)).toEqual({ kind: 'gone', why: undefined }); // pushed out
    expect(parking.ended(failed[2]!.call.id, 'alice', 1).kind).toBe('gone');
    expect(parking.ended(failed[2]!.call.id, 'alice', 1)).toMatchObject({ why: expect.stringMatching(/ended while it waited/) });
    clock.advance(5_000);
    expect(parking.ended(failed[2]!.call.id, 'alice', 1)).toEqual({ kind: 'gone', why: undefined });
  });

  it('remembers nothing of a parked call the gateway cancelled: it takes no room from one with something to tell', async () => {
    const { parking, clock } = setup({ maxParkedTotal: 1 });
    const failed = asking();
    await parking.park(failed.call, TTL * 2);
    failed.finish.reject(new GatewayError('backend_closed', 'b'));
    await settle();
    const { call } = asking();
    await parking.park(call, TTL);
    clock.advance(TTL); // its expiry cancels it
    expect(call.done).toBe(true);
    expect(parking.ended(call.id, 'alice', 1)).toEqual({ kind: 'gone', why: undefined });
    expect(parking.ended(failed.call.id, 'alice', 1)).toMatchObject({ kind: 'gone', why: expect.stringMatching(/ended while it waited/) });
  });
});
