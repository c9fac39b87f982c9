/** A lifeline (util/lifeline.ts): ends once, tells its listeners once, in order, as an AbortSignal would. */
import { describe, expect, it } from 'vitest';
import { Lifeline } from '../../src/util/lifeline.js';

describe('a lifeline', () => {
  it('tells each listener still on it once, in order, and nothing added after its end', () => {
    const life = new Lifeline();
    const heard: string[] = [];
    const object = { handleEvent: () => heard.push(`object:${String(life.reason)}`) };
    const gone = (): number => heard.push('removed');
    life.addEventListener('abort', () => heard.push('first'));
    life.addEventListener('abort', gone);
    life.addEventListener('abort', object, { once: true });
    life.removeEventListener('abort', gone);
    life.addEventListener('abort', () => {
      throw new Error('a failing listener');
    });
    life.addEventListener('abort', () => heard.push('last'));
    expect(life.aborted).toBe(false);
    life.abort('why');
    life.abort('again');
    life.addEventListener('abort', () => heard.push('late'));
    expect(life.aborted).toBe(true);
    expect(life.reason).toBe('why');
    expect(heard).toEqual(['first', 'object:why', 'last']);
  });

  it('forgets a single listener taken off before the end', () => {
    const life = new Lifeline();
    let called = false;
    const only = { handleEvent: () => (called = true) };
    life.addEventListener('abort', only);
    life.removeEventListener('abort', only);
    life.abort(undefined);
    expect(called).toBe(false);
  });
  it('gives an AbortSignal only when asked, aborted with it whether asked before or after its end', () => {
    const early = new Lifeline();
    const signal = early.signal;
    expect(early.signal).toBe(signal); // one signal, made once
    early.abort('why');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('why');
    const late = new Lifeline();
    late.abort('later');
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBe('later');
  });
  it('adds a listener once, skips one taken off by an earlier listener, and gives an AbortError for no reason', () => {
    const life = new Lifeline();
    const heard: string[] = [];
    const twice = (): number => heard.push('twice');
    const skipped = (): number => heard.push('skipped');
    life.addEventListener('abort', twice);
    life.addEventListener('abort', twice);
    life.addEventListener('abort', () => life.removeEventListener('abort', skipped));
    life.addEventListener('abort', skipped);
    life.abort();
    expect(heard).toEqual(['twice']);
    expect(life.reason).toBeInstanceOf(DOMException);
    expect((life.reason as DOMException).name).toBe('AbortError');
    expect(life.signal.reason).toBe(life.reason);
  });
});
