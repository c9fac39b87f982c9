/** Unit tests of one Call (the engine's unit of work) with an in-memory executor standing in for the backend. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { BackendRequestRefused, ClientRefusal, type BackendOutcome, type CancelSource } from '../../../src/core/backend/port.js';
import { until } from '../../helpers/until.js';
import { Call } from '../../../src/core/calls/call.js';
import { SamplingGate } from '../../../src/core/calls/sampling-gate.js';
import { INPUT_KEY_META } from '../../../src/core/calls/input-keys.js';
import type { InputCapabilities } from '../../../src/core/input-capabilities.js';
import { createDeferred } from '../../../src/util/deferred.js';

const signal = (): AbortSignal => new AbortController().signal;
const elicit = (message: string, key?: string) => ({
  message,
  requestedSchema: { type: 'object', properties: {} },
  ...(key ? { _meta: { [INPUT_KEY_META]: key } } : {}),
});

function setup(caps: InputCapabilities, prefill?: Record<string, Record<string, unknown>>) {
  const call = new Call({ id: 'c1', principal: 'p', method: 'tools/call', backend: 'b', caps, prefill });
  const finish = createDeferred<BackendOutcome>();
  let execSignal: CancelSource | undefined;
  call.run((s) => {
    execSignal = s;
    return finish.promise;
  });
  return { call, finish, execSignal: () => execSignal };
}

describe('Call', () => {
  it('shows pending inputs under stable keys without consuming them, and takes partial answers', async () => {
    const { call, finish } = setup({ elicitation: { form: {} }, sampling: {} });
    expect(call.status).toBe('working');
    const a = call.requestInput('elicitation/create', elicit('a', 'user_name'), signal());
    const b = call.requestInput('sampling/createMessage', { messages: [], maxTokens: 1 }, signal());
    expect(call.status).toBe('input_required');
    expect(call.pending.map((p) => p.key)).toEqual(['user_name', 'sampling_1']);
    expect(call.pending.map((p) => p.key)).toEqual(['user_name', 'sampling_1']); // reading twice consumes nothing
    expect(call.pending[0]!.params).toEqual({ message: 'a', requestedSchema: { type: 'object', properties: {} } });
    expect(call.answer({ user_name: { action: 'accept', content: {} }, unknown: { x: 1 } })).toEqual(['user_name']);
    await expect(a).resolves.toEqual({ action: 'accept', content: {} });
    expect(call.pending.map((p) => p.key)).toEqual(['sampling_1']);
    call.answer({ sampling_1: { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' } });
    await expect(b).resolves.toMatchObject({ model: 'm' });
    expect(call.status).toBe('working');
    finish.resolve({ kind: 'complete', result: { content: [] } });
    await call.nextChange(signal());
    expect(call.status).toBe('completed');
    expect(call.outcome).toEqual({ kind: 'done', outcome: { kind: 'complete', result: { content: [] } } });
  });

  it('numbers keys per kind and never reuses one', () => {
    const { call } = setup({ elicitation: { form: {} }, sampling: {}, roots: {} });
    call.requestInput('elicitation/create', elicit('a'), signal()).catch(() => undefined);
    call.requestInput('sampling/createMessage', { messages: [], maxTokens: 1 }, signal()).catch(() => undefined);
    call.requestInput('elicitation/create', elicit('b'), signal()).catch(() => undefined);
    call.requestInput('roots/list', {}, signal()).catch(() => undefined);
    expect(call.pending.map((p) => p.key)).toEqual(['elicitation_1', 'sampling_1', 'elicitation_2', 'roots_1']);
  });

  it('refuses a request the caller did not declare: backend error, call fails with -32021, backend call aborted', async () => {
    const { call, execSignal } = setup({ elicitation: { form: {} } });
    await expect(call.requestInput('roots/list', {}, signal())).rejects.toBeInstanceOf(BackendRequestRefused);
    expect(call.status).toBe('failed');
    expect(call.outcome).toMatchObject({ kind: 'error', error: { code: -32021, data: { requiredCapabilities: { roots: {} } } } });
    expect(execSignal()?.aborted).toBe(true);
  });

  it('checks answers against the method result schema without touching the call', () => {
    const { call } = setup({ elicitation: { form: {} } });
    call
      .requestInput('elicitation/create', elicit('x', 'k'), signal())
      .catch(() => undefined)
      .catch(() => undefined);
    expect(call.checkAnswers({ k: { action: 'nope' } }).ok).toBe(false);
    expect(call.checkAnswers({ other: { anything: 1 } }).ok).toBe(true);
    expect(call.checkAnswers({ k: { action: 'decline' } }).ok).toBe(true);
    expect(call.pending.map((p) => p.key)).toEqual(['k']);
  });

  it('answers a request from prefilled responses at once', async () => {
    const { call } = setup({ elicitation: { form: {} } }, { user_name: { action: 'accept', content: { name: 'A' } } });
    await expect(call.requestInput('elicitation/create', elicit('x', 'user_name'), signal())).resolves.toEqual({ action: 'accept', content: { name: 'A' } });
    expect(call.pending).toEqual([]);
  });

  it('keeps progress and log events with sequence numbers; a late reader catches up; the log is bounded', () => {
    const call = new Call({ id: 'c', principal: 'p', method: 'tools/call', backend: 'b', caps: {}, maxEvents: 3 });
    call.run(() => new Promise(() => undefined));
    call.progress({ progress: 1 });
    call.log({ level: 'info', data: 'one', _meta: { x: 1 } });
    call.log({ level: 'nonsense', data: 'dropped' });
    expect(call.events(0).events.map((e) => e.event)).toEqual([
      { kind: 'progress', progress: { progress: 1 } },
      { kind: 'log', level: 'info', params: { level: 'info', data: 'one' } },
    ]);
    call.progress({ progress: 2 });
    call.progress({ progress: 3 });
    const late = call.events(0);
    expect(late.missed).toBe(1);
    expect(late.events.map((e) => e.seq)).toEqual([2, 3, 4]);
    expect(call.events(3).events.map((e) => e.seq)).toEqual([4]);
    call.cancel();
  });

  it('cancel() fails pending backend requests, aborts the backend call; nextChange rejects on its own signal', async () => {
    const { call, execSignal } = setup({ elicitation: { form: {} } });
    const pending = call.requestInput('elicitation/create', elicit('x'), signal());
    call.cancel();
    await expect(pending).rejects.toBeInstanceOf(BackendRequestRefused);
    expect(call.status).toBe('cancelled');
    expect(execSignal()?.aborted).toBe(true);
    const { call: other } = setup({});
    const ac = new AbortController();
    const waiting = other.nextChange(ac.signal);
    ac.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
  });

  it('drops a pending input when the backend withdraws its own request', async () => {
    const { call } = setup({ elicitation: { form: {} } });
    const backendAbort = new AbortController();
    const p = call.requestInput('elicitation/create', elicit('x'), backendAbort.signal);
    backendAbort.abort(new Error('backend cancelled'));
    await expect(p).rejects.toThrow('backend cancelled');
    expect(call.pending).toEqual([]);
    expect(call.status).toBe('working');
  });

  it('records what became of each input request once it stopped waiting', async () => {
    const { call } = setup({ elicitation: { form: {} }, sampling: {} });
    const settle = (p: Promise<unknown>) => p.catch(() => undefined);
    const answered = call.requestInput('elicitation/create', elicit('a', 'a'), signal());
    const refused = settle(call.requestInput('elicitation/create', elicit('b', 'b'), signal()));
    const notRelayed = settle(call.requestInput('elicitation/create', elicit('c', 'c'), signal()));
    const backendAbort = new AbortController();
    const withdrawn = settle(call.requestInput('elicitation/create', elicit('d', 'd'), backendAbort.signal));
    const ended = settle(call.requestInput('elicitation/create', elicit('e', 'e'), signal()));
    expect(call.inputFate('a')).toBeUndefined(); // still waiting
    call.answer({ a: { action: 'decline' } });
    call.refuse('b', new ClientRefusal(-1, 'no'));
    call.refuse('c', new BackendRequestRefused(-32601, 'nobody can answer it'));
    backendAbort.abort();
    call.cancel();
    await Promise.all([answered, refused, notRelayed, withdrawn, ended]);
    expect(['a', 'b', 'c', 'd', 'e', 'never'].map((k) => call.inputFate(k))).toEqual(['answered', 'refused', 'not_relayed', 'withdrawn', 'ended', undefined]);
  });

  it('tells a sampling request that timed out in its gate from one the backend withdrew', async () => {
    const sampling = new SamplingGate({ maxConcurrent: 4, timeoutMs: 20, failureThreshold: 3, openMs: 1_000 });
    const call = new Call({ id: 'c2', principal: 'p', method: 'tools/call', backend: 'b', caps: { sampling: {} }, sampling: () => sampling });
    call.run(() => new Promise(() => undefined));
    const asked = call.requestInput('sampling/createMessage', { messages: [], maxTokens: 1 }, signal());
    await expect(asked).rejects.toMatchObject({ code: -32001 });
    expect(call.inputFate('sampling_1')).toBe('timed_out');
    expect(call.pending).toEqual([]);
    call.cancel();
  });

  it("keeps a backend's other notifications for the call as events", () => {
    const { call } = setup({});
    call.notification('notifications/resources/updated', { uri: 'test://x', _meta: { hidden: true } });
    expect(call.events(0).events.map((e) => e.event)).toEqual([
      { kind: 'notification', method: 'notifications/resources/updated', params: { uri: 'test://x' } },
    ]);
    call.cancel();
  });
});

describe("a call's end", () => {
  it('tells the backend through its life, and an AbortSignal made before or after the end says the same', async () => {
    const { call, finish, execSignal } = setup({});
    const heard: unknown[] = [];
    const listener = { handleEvent: () => heard.push(execSignal()!.reason) };
    const removed = { handleEvent: () => heard.push('removed') };
    execSignal()!.addEventListener('abort', listener, { once: true });
    execSignal()!.addEventListener('abort', removed, { once: true });
    execSignal()!.removeEventListener('abort', removed);
    const before = call.signal;
    expect(before.aborted).toBe(false);
    finish.resolve({ kind: 'complete', result: {} });
    await until('the call is done', () => call.done);
    expect(execSignal()!.aborted).toBe(true);
    expect(heard).toEqual([execSignal()!.reason]);
    expect(before.aborted).toBe(true);
    expect(before.reason).toBe(execSignal()!.reason);

    const { call: cancelled } = setup({});
    const why = new Error('gone');
    cancelled.cancel(why);
    expect(cancelled.signal.aborted).toBe(true);
    expect(cancelled.signal.reason).toBe(why);
  });

  describe('waiting for its client (what the session pool reclaims)', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('waits from its first unanswered input request; an answer, even a partial one, starts the wait again', () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { call } = setup({ elicitation: { form: {} }, sampling: {} });
      expect(call.waitingSince()).toBeUndefined();
      call.requestInput('elicitation/create', elicit('a', 'user_name'), signal()).catch(() => undefined);
      const first = Date.now();
      vi.advanceTimersByTime(500);
      call.requestInput('sampling/createMessage', { messages: [], maxTokens: 1 }, signal()).catch(() => undefined);
      expect(call.waitingSince()).toBe(first); // a second request does not restart it
      vi.advanceTimersByTime(500);
      call.answer({ user_name: { action: 'accept', content: {} } });
      expect(call.waitingSince()).toBe(first + 1_000); // answered in part: it waits for the rest from now
      call.answer({ sampling_1: { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' } });
      expect(call.waitingSince()).toBeUndefined(); // working again
    });

    it('fails when reclaimed (a task reads failed, not cancelled), its backend call ended with the reason', async () => {
      const { call, execSignal } = setup({ elicitation: { form: {} } });
      const asked = call.requestInput('elicitation/create', elicit('a'), signal());
      asked.catch(() => undefined);
      const reason = new GatewayError('call_reclaimed', 'b');
      call.reclaim(reason);
      expect(call.status).toBe('failed');
      expect(call.outcome).toEqual({ kind: 'error', error: reason });
      expect(execSignal()?.aborted).toBe(true);
      await expect(asked).rejects.toBeInstanceOf(BackendRequestRefused);
      expect(call.waitingSince()).toBeUndefined();
    });
  });
});
