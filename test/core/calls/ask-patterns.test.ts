/**
 * What a backend operation does when it asks for input (src/core/calls/ask-patterns.ts), as calls learn
 * it: an input request made while another of the call's requests is outstanding marks the operation as
 * asking for things together; requests one after another, each answered first, do not. The rounds read
 * it to choose their quiet gap (gateway/quiet-gap.ts).
 */
import { describe, expect, it } from 'vitest';
import { ONCE_AFTER, AskPatterns, askKey, operationOf } from '../../../src/core/calls/ask-patterns.js';
import { Call } from '../../../src/core/calls/call.js';
import type { BackendOutcome } from '../../../src/core/backend/port.js';
import { createDeferred } from '../../../src/util/deferred.js';

const signal = (): AbortSignal => new AbortController().signal;
const ELICIT = { message: 'm', requestedSchema: { type: 'object', properties: {} } };
const SAMPLE = { messages: [], maxTokens: 1 };
const ACCEPT = { action: 'accept', content: {} };

/** A running call of `operation`; with `prefill`, one started with answers given in advance (a fresh request carrying `inputResponses`). */
function callOf(patterns: AskPatterns, operation: string, backend = 'b', prefill?: ConstructorParameters<typeof Call>[0]['prefill']): Call {
  const call = new Call({
    id: `c-${operation}`,
    principal: 'p',
    method: 'tools/call',
    backend,
    caps: { elicitation: { form: {} }, sampling: {}, roots: {} },
    askPatterns: patterns,
    operation,
    prefill,
  });
  call.run(() => createDeferred<BackendOutcome>().promise);
  return call;
}

describe('AskPatterns', () => {
  it('learns that an operation asks together from a request made while another is outstanding', () => {
    const patterns = new AskPatterns();
    const first = callOf(patterns, 'both');
    first.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect(first.asksTogether).toBe(false);
    first.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    expect(first.asksTogether).toBe(true);
    // A later call of the same operation knows before it asks anything; another operation or backend does not.
    expect(callOf(patterns, 'both').asksTogether).toBe(true);
    expect(callOf(patterns, 'ask').asksTogether).toBe(false);
    expect(callOf(patterns, 'both', 'other').asksTogether).toBe(false);
    expect(patterns.size).toBe(1);
  });

  it('learns how many requests each wave of its calls holds, and a later call expects as many in the same wave', async () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'survey');
    const first = callOf(patterns, 'survey');
    // Wave 0: three requests together; wave 1: one alone; wave 2: two together.
    const waves = [
      ['elicitation/create', 'sampling/createMessage', 'elicitation/create'],
      ['elicitation/create'],
      ['sampling/createMessage', 'sampling/createMessage'],
    ];
    for (const wave of waves) {
      const asked = wave.map((method) => first.requestInput(method, method === 'elicitation/create' ? ELICIT : SAMPLE, signal()));
      first.answer(
        Object.fromEntries(
          first.pending.map(({ key: k, method }) => [
            k,
            method === 'elicitation/create' ? ACCEPT : { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' },
          ]),
        ),
      );
      await Promise.all(asked);
    }
    expect([0, 1, 2, 3].map((wave) => patterns.expected(key, wave))).toEqual([3, 0, 2, 0]);

    const next = callOf(patterns, 'survey');
    expect(next.waveExpectation).toBe('unknown'); // asking nothing yet: no wave to expect of
    next.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect(next.waveExpectation).toBe('more');
    next.requestInput('roots/list', {}, signal()).catch(() => undefined); // not counted
    expect(next.waveExpectation).toBe('more');
    next.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    next.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect(next.waveExpectation).toBe('met');
  });

  it('lowers a wave it expected more of when a round went out at its bound without them, until a call asks as many again', () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'maybe');
    patterns.noteTogether(key, 0, 2);
    const fewer = callOf(patterns, 'maybe');
    fewer.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect(fewer.waveExpectation).toBe('more');
    fewer.askedFewer();
    // Below two, not known: the round takes the gap of an operation that asks together, not the short one.
    expect(fewer.waveExpectation).toBe('unknown');
    expect(patterns.expected(key, 0)).toBe(0);
    expect(patterns.together(key)).toBe(true);
    const more = callOf(patterns, 'maybe');
    more.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    more.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    more.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    expect(patterns.expected(key, 0)).toBe(3);
    // Lowered from three to two, two is what the wave expects.
    const two = callOf(patterns, 'maybe');
    two.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    two.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    expect(two.waveExpectation).toBe('more');
    two.askedFewer();
    expect([two.waveExpectation, patterns.expected(key, 0)]).toEqual(['met', 2]);
  });

  it('counts the most requests unanswered at once: requests answered one at a time, or withdrawn and asked again, do not add up', async () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'one-by-one');
    const call = callOf(patterns, 'one-by-one');
    const first = call.requestInput('elicitation/create', ELICIT, signal());
    const gone = new AbortController();
    call.requestInput('elicitation/create', ELICIT, gone.signal).catch(() => undefined); // two at once
    expect(call.answer({ elicitation_1: ACCEPT })).toHaveLength(1); // answered one at a time (a proxy tool, a partial tasks/update)
    await first;
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined); // still two at once
    gone.abort(new Error('withdrawn'));
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined); // asked again: two at once
    expect(patterns.expected(key, 0)).toBe(2);
  });

  it('learns only that it asks together from a call that used answers given in advance, and expects nothing of it', async () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'both');
    patterns.noteTogether(key, 0, 2);
    const call = callOf(patterns, 'both', 'b', { elicitation_1: ACCEPT });
    await call.requestInput('elicitation/create', ELICIT, signal()); // answered from what was given
    call.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    expect(call.waveExpectation).toBe('unknown'); // not 'more': its first request never waited
    call.askedFewer();
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect([patterns.expected(key, 0), patterns.expected(key, 1), patterns.together(key)]).toEqual([2, 0, true]);
  });

  it('learns the count of the first 16 waves only', () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'long');
    patterns.noteTogether(key, 15, 2);
    patterns.noteTogether(key, 16, 2);
    expect([15, 16].map((wave) => patterns.expected(key, wave))).toEqual([2, 0]);
    expect(patterns.together(key)).toBe(true);
  });

  it('does not learn it from requests made one after another, each answered first', async () => {
    const patterns = new AskPatterns();
    const call = callOf(patterns, 'wizard');
    for (let i = 0; i < 3; i++) {
      const asked = call.requestInput('elicitation/create', ELICIT, signal());
      expect(call.answer({ [call.pending[0]!.key]: ACCEPT })).toHaveLength(1);
      await asked;
    }
    expect(call.asksTogether).toBe(false);
    expect(patterns.size).toBe(0);
  });

  it('is bounded: past its size the oldest operation learned is forgotten', () => {
    const patterns = new AskPatterns(2);
    const key = (op: string): string => askKey('b', 'tools/call', op);
    for (const op of ['a', 'b', 'c']) patterns.noteTogether(key(op), 0, 2);
    expect(patterns.size).toBe(2);
    expect(['a', 'b', 'c'].map((op) => patterns.together(key(op)))).toEqual([false, true, true]);
    patterns.noteTogether(key('b'), 0, 2); // known already: it becomes the newest
    patterns.noteTogether(key('d'), 0, 2); // and 'c', now the oldest, is forgotten
    expect(patterns.size).toBe(2);
    expect(['b', 'c', 'd'].map((op) => patterns.together(key(op)))).toEqual([true, false, true]);
  });

  it('learns that an operation asks once after ONCE_AFTER first rounds of one request each, until one of its calls asks a second thing', async () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'ask');
    for (let i = 0; i < ONCE_AFTER; i++) {
      expect(patterns.once(key)).toBe(false);
      const call = callOf(patterns, 'ask');
      call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
      call.wentOutOnce();
    }
    expect(patterns.once(key)).toBe(true);
    expect(callOf(patterns, 'ask').asksOnce).toBe(true);
    expect(callOf(patterns, 'other').asksOnce).toBe(false);
    // A call of it asks a second thing, after its first was answered: it asks again, and never once from then on.
    const call = callOf(patterns, 'ask');
    const first = call.requestInput('elicitation/create', ELICIT, signal());
    call.answer({ [call.pending[0]!.key]: ACCEPT });
    await first;
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect([call.asksTogether, call.asksOnce]).toEqual([false, false]);
    for (let i = 0; i < ONCE_AFTER; i++) patterns.noteOnce(key);
    expect(patterns.once(key)).toBe(false);
  });

  it('learns nothing of asking once from a call that asks two things together, or one told its answers in advance', () => {
    const patterns = new AskPatterns();
    for (let i = 0; i < ONCE_AFTER; i++) {
      const call = callOf(patterns, 'pair');
      call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
      call.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
      call.wentOutOnce();
    }
    expect(patterns.once(askKey('b', 'tools/call', 'pair'))).toBe(false);
    for (let i = 0; i < ONCE_AFTER; i++) {
      const prefilled = callOf(patterns, 'told', 'b', { elicitation_99: ACCEPT });
      prefilled.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
      prefilled.wentOutOnce();
    }
    expect(patterns.once(askKey('b', 'tools/call', 'told'))).toBe(false);
  });

  it('a request answered in advance counts as asked: a second request after it makes its operation one that asks again', () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'two');
    for (let i = 0; i < ONCE_AFTER; i++) patterns.noteOnce(key);
    expect(patterns.once(key)).toBe(true);
    const call = callOf(patterns, 'two', 'b', { elicitation_1: ACCEPT });
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined); // answered from what the request carried
    expect(patterns.once(key)).toBe(true);
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect(patterns.once(key)).toBe(false);
  });

  it('does not count roots/list as a second thing asked', () => {
    const patterns = new AskPatterns();
    const key = askKey('b', 'tools/call', 'ask');
    for (let i = 0; i < ONCE_AFTER; i++) patterns.noteOnce(key);
    const call = callOf(patterns, 'ask');
    call.requestInput('roots/list', {}, signal()).catch(() => undefined);
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    call.requestInput('roots/list', {}, signal()).catch(() => undefined);
    expect(patterns.once(key)).toBe(true);
  });

  it('is bounded in what it learns of asking once too: past its size the operation noted longest ago is forgotten', () => {
    const patterns = new AskPatterns(2);
    const key = (op: string): string => askKey('b', 'tools/call', op);
    for (const op of ['a', 'b', 'c']) for (let i = 0; i < ONCE_AFTER; i++) patterns.noteOnce(key(op));
    expect(['a', 'b', 'c'].map((op) => patterns.once(key(op)))).toEqual([false, true, true]);
    patterns.noteAgain(key('d')); // 'b', now the oldest, is forgotten
    expect(['b', 'c'].map((op) => patterns.once(key(op)))).toEqual([false, true]);
  });

  it("does not count a roots/list request: a session's own reaches whichever call binds next", () => {
    const patterns = new AskPatterns();
    const call = callOf(patterns, 'ask');
    call.requestInput('roots/list', {}, signal()).catch(() => undefined);
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    expect(call.asksTogether).toBe(false);
    call.requestInput('roots/list', {}, signal()).catch(() => undefined);
    expect(call.asksTogether).toBe(false);
    call.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    expect(call.asksTogether).toBe(true);
  });

  it('learns nothing for a call started without an operation', () => {
    const patterns = new AskPatterns();
    const call = new Call({
      id: 'c',
      principal: 'p',
      method: 'tools/call',
      backend: 'b',
      caps: { elicitation: { form: {} }, sampling: {} },
      askPatterns: patterns,
    });
    call.run(() => createDeferred<BackendOutcome>().promise);
    call.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    call.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    expect(call.asksTogether).toBe(false);
    expect(patterns.size).toBe(0);
  });

  it("names a tool or prompt only as its backend's last known list holds it, a resource by its template or not at all", () => {
    const backend = { cachedList: (kind: string) => (kind === 'tools' ? [{ name: 'echo' }] : undefined) };
    expect(operationOf({ backend, name: 'echo' }, 'tools/call', {})).toBe('echo');
    expect(operationOf({ backend, name: 'x'.repeat(10_000) }, 'tools/call', {})).toBeUndefined();
    expect(operationOf({ backend, name: 'echo' }, 'prompts/get', {})).toBeUndefined(); // no list known
    expect(operationOf({ backend, name: 'file:///home/alice/notes', template: 'file:///{path}' }, 'resources/read', {})).toBe('file:///{path}');
    expect(operationOf({ backend, name: 'file:///home/alice/notes' }, 'resources/read', {})).toBe('');
  });

  it("a call that relays another's requests (a proxy tool) asks as that call's operation does, and sees its backend", () => {
    const patterns = new AskPatterns();
    const outer = callOf(new AskPatterns(), 'execute_tool', 'proxy');
    const inner = callOf(patterns, 'both');
    inner.watchBackend(() => 'idle');
    outer.relays(inner);
    expect(outer.asksTogether).toBe(false);
    expect(outer.backendActivity).toBe('idle');
    inner.requestInput('elicitation/create', ELICIT, signal()).catch(() => undefined);
    inner.requestInput('sampling/createMessage', SAMPLE, signal()).catch(() => undefined);
    expect(outer.asksTogether).toBe(true);
    outer.relays(undefined);
    expect(outer.asksTogether).toBe(false);
    expect(outer.backendActivity).toBe('unknown');
  });
});
