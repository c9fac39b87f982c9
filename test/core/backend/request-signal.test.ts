/** The signal a backend session gives the v1 SDK for one request: follows the caller's signal until disposed. */
import { describe, expect, it } from 'vitest';
import { RequestSignal } from '../../../src/core/backend/request-signal.js';

describe('a request signal', () => {
  it("aborts with the caller's reason and runs the SDK's listener once", () => {
    const parent = new AbortController();
    const link = new RequestSignal(parent.signal);
    const seen: unknown[] = [];
    link.signal.addEventListener('abort', () => seen.push(link.signal.reason));
    expect(() => link.signal.throwIfAborted()).not.toThrow();
    parent.abort('stop');
    parent.abort('again');
    expect(link.signal.aborted).toBe(true);
    expect(seen).toEqual(['stop']);
    expect(() => link.signal.throwIfAborted()).toThrow('stop');
  });

  it("is aborted from the start under an aborted signal, and lets go of the caller's signal and the listener once disposed", () => {
    const done = new AbortController();
    done.abort('gone');
    expect(new RequestSignal(done.signal).signal.reason).toBe('gone');

    const parent = new AbortController();
    const link = new RequestSignal(parent.signal);
    let called = false;
    link.signal.addEventListener('abort', () => (called = true));
    link.dispose();
    parent.abort('late');
    expect(link.signal.aborted).toBe(false);
    expect(called).toBe(false);
  });
});
