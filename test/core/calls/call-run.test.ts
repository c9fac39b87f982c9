/** Unit tests of one CallRun with an in-memory executor standing in for the backend session. */
import { describe, expect, it } from 'vitest';
import { BackendRequestRefused, CallRun, type BackendExecutor } from '../../../src/core/calls/call-run.js';
import { INPUT_KEY_META } from '../../../src/core/calls/input-keys.js';
import { createDeferred } from '../../../src/util/deferred.js';

const signal = () => new AbortController().signal;
const elicit = (message: string, key?: string) => ({
  message,
  requestedSchema: { type: 'object', properties: {} },
  ...(key ? { _meta: { [INPUT_KEY_META]: key } } : {}),
});

function setup(coalesceMs = 20) {
  const run = new CallRun({ id: 'r1', principal: 'p', method: 'tools/call', coalesceMs });
  const finish = createDeferred<Record<string, unknown>>();
  let execSignal: AbortSignal | undefined;
  const exec: BackendExecutor = ({ signal: s }) => {
    execSignal = s;
    return finish.promise;
  };
  return { run, finish, exec, execSignal: () => execSignal };
}

describe('CallRun', () => {
  it('coalesces concurrent backend requests into one round with stable keys', async () => {
    const { run, exec, finish } = setup();
    run.start(exec, { caps: { elicitation: { form: {} }, sampling: {} } });
    const a = run.requestInput('elicitation/create', elicit('a', 'user_name'), signal());
    const b = run.requestInput('sampling/createMessage', { messages: [], maxTokens: 1 }, signal());
    const out = await run.nextOutcome(signal());
    expect(out.kind).toBe('input');
    if (out.kind !== 'input') return;
    expect(Object.keys(out.inputRequests)).toEqual(['user_name', 'sampling_1']);
    expect(out.inputRequests['user_name']!.params).toEqual({ message: 'a', requestedSchema: { type: 'object', properties: {} } });
    expect(out.round).toBe(1);
    // answer one: the other stays pending under the same key
    run.resume({ caps: { elicitation: { form: {} }, sampling: {} } }, { user_name: { action: 'accept', content: {} } });
    await expect(a).resolves.toEqual({ action: 'accept', content: {} });
    const again = await run.nextOutcome(signal());
    expect(again.kind === 'input' && Object.keys(again.inputRequests)).toEqual(['sampling_1']);
    run.resume({ caps: { sampling: {} } }, { sampling_1: { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' } });
    await expect(b).resolves.toMatchObject({ model: 'm' });
    finish.resolve({ content: [] });
    expect(await run.nextOutcome(signal())).toEqual({ kind: 'result', result: { content: [] } });
  });

  it('refuses a request the round did not declare: backend error, front -32021, call aborted', async () => {
    const { run, exec, execSignal } = setup();
    run.start(exec, { caps: { elicitation: { form: {} } } });
    await expect(run.requestInput('roots/list', {}, signal())).rejects.toBeInstanceOf(BackendRequestRefused);
    const out = await run.nextOutcome(signal());
    expect(out.kind).toBe('error');
    expect(out.kind === 'error' && out.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { roots: {} } } });
    expect(execSignal()?.aborted).toBe(true);
  });

  it('checks answers against the method result schema without touching the run', async () => {
    const { run, exec } = setup(0);
    run.start(exec, { caps: { elicitation: { form: {} } } });
    void run.requestInput('elicitation/create', elicit('x', 'k'), signal()).catch(() => undefined);
    await run.nextOutcome(signal());
    expect(run.checkAnswers({ k: { action: 'nope' } }).ok).toBe(false);
    expect(run.checkAnswers({ other: { anything: 1 } }).ok).toBe(true);
    expect(run.checkAnswers({ k: { action: 'decline' } }).ok).toBe(true);
  });

  it('answers a request from prefilled responses at once', async () => {
    const { run, exec } = setup();
    run.start(exec, { caps: { elicitation: { form: {} } } }, { user_name: { action: 'accept', content: { name: 'A' } } });
    await expect(run.requestInput('elicitation/create', elicit('x', 'user_name'), signal())).resolves.toEqual({ action: 'accept', content: { name: 'A' } });
  });

  it('cancel() fails pending backend requests and aborts the backend call; the front wait rejects on its own signal', async () => {
    const { run, exec, execSignal } = setup();
    run.start(exec, { caps: { elicitation: { form: {} } } });
    const pending = run.requestInput('elicitation/create', elicit('x'), signal());
    run.cancel();
    await expect(pending).rejects.toBeInstanceOf(BackendRequestRefused);
    expect(execSignal()?.aborted).toBe(true);
    const ac = new AbortController();
    const { run: run2, exec: exec2 } = setup();
    run2.start(exec2, { caps: {} });
    const waiting = run2.nextOutcome(ac.signal);
    ac.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
  });

  it('drops a pending input when the backend cancels its own request', async () => {
    const { run, exec } = setup(0);
    run.start(exec, { caps: { elicitation: { form: {} } } });
    const backendAbort = new AbortController();
    const p = run.requestInput('elicitation/create', elicit('x'), backendAbort.signal);
    backendAbort.abort(new Error('backend cancelled'));
    await expect(p).rejects.toThrow('backend cancelled');
    const res = createDeferred<unknown>();
    void run.nextOutcome(AbortSignal.timeout(100)).then(res.resolve, res.resolve);
    expect(await res.promise).toBeInstanceOf(Error); // nothing pending: waits until its own deadline
  });
});
