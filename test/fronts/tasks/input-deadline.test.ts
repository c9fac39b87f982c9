/** Unit tests of a task's input deadline (fronts/tasks/input-deadline.ts) on one Call, with an in-memory executor and the manual clock. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BackendOutcome } from '../../../src/core/backend/port.js';
import { Call } from '../../../src/core/calls/call.js';
import { INPUT_KEY_META } from '../../../src/core/calls/input-keys.js';
import { boundInputWaits } from '../../../src/fronts/tasks/input-deadline.js';
import { createDeferred } from '../../../src/util/deferred.js';
import { ManualClock } from '../../helpers/manual-clock.js';

const signal = (): AbortSignal => new AbortController().signal;
const elicit = (key: string) => ({ message: key, requestedSchema: { type: 'object', properties: {} }, _meta: { [INPUT_KEY_META]: key } });
const ACCEPT = { action: 'accept', content: {} };
/** Lets the watch see the call's last change (a few turns of the microtask queue). */
const settle = () => new Promise((r) => setImmediate(r));

function setup() {
  const call = new Call({ id: 'c', principal: 'p', method: 'tools/call', backend: 'b', caps: { elicitation: { form: {} } } });
  const finish = createDeferred<BackendOutcome>();
  call.run(() => finish.promise);
  const clock = new ManualClock();
  // The call stamps its waits on the system clock: here, the manual one.
  vi.spyOn(Date, 'now').mockImplementation(() => clock.now());
  const forgotten = new AbortController();
  const watching = boundInputWaits(call, 1_000, clock, forgotten.signal);
  return { call, finish, clock, forgotten, watching };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('boundInputWaits', () => {
  it('fails a call that waited for its answer as long as the deadline (input_timeout), not a millisecond sooner', async () => {
    const { call, clock, watching } = setup();
    const asked = call.requestInput('elicitation/create', elicit('name'), signal());
    asked.catch(() => undefined);
    await settle();
    clock.advance(999);
    expect(call.status).toBe('input_required');
    clock.advance(1);
    expect(call.status).toBe('failed');
    expect(call.outcome).toMatchObject({ kind: 'error', error: { code: 'input_timeout' } });
    await expect(asked).rejects.toBeDefined(); // the backend's request fails: its session is free
    await watching;
  });

  it('times each wait from its start: time spent working, or waiting for an answer already given, does not count', async () => {
    const { call, clock, finish, watching } = setup();
    /** Answers `key`, sees its request get the answer, and lets the watch see the change. */
    const answer = async (key: string, asked: Promise<Record<string, unknown>>) => {
      call.answer({ [key]: ACCEPT });
      await expect(asked).resolves.toEqual(ACCEPT);
      await settle();
    };
    clock.advance(5_000); // working, nothing asked
    await settle();
    const first = call.requestInput('elicitation/create', elicit('a'), signal());
    const second = call.requestInput('elicitation/create', elicit('b'), signal());
    await settle();
    clock.advance(900);
    await answer('a', first); // answered in part: what it still waits for is timed from now
    clock.advance(900);
    expect(call.status).toBe('input_required');
    await answer('b', second);
    const third = call.requestInput('elicitation/create', elicit('c'), signal());
    await settle();
    clock.advance(999);
    expect(call.status).toBe('input_required');
    await answer('c', third);
    clock.advance(5_000);
    expect(call.status).toBe('working');
    finish.resolve({ kind: 'complete', result: { content: [] } });
    await watching; // the call ended: the watch with it
    expect(call.status).toBe('completed');
  });

  it('gives a backend that keeps asking no more time: a request that comes while others wait joins their wait', async () => {
    const { call, clock, watching } = setup();
    const asks = [call.requestInput('elicitation/create', elicit('a'), signal())];
    await settle();
    for (const key of ['b', 'c']) {
      clock.advance(450);
      asks.push(call.requestInput('elicitation/create', elicit(key), signal()));
      await settle();
    }
    for (const a of asks) a.catch(() => undefined);
    clock.advance(99);
    expect(call.status).toBe('input_required');
    clock.advance(1); // 1,000 ms since `a` was asked
    expect(call.status).toBe('failed');
    await watching;
  });

  it('stops timing once the task is forgotten', async () => {
    const { call, clock, forgotten, watching } = setup();
    call.requestInput('elicitation/create', elicit('name'), signal()).catch(() => undefined);
    await settle();
    forgotten.abort();
    await watching;
    clock.advance(10_000);
    expect(call.status).toBe('input_required');
    call.cancel();
  });
});
