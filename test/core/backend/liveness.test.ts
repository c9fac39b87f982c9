import { afterEach, describe, expect, it, vi } from 'vitest';
import { Traffic, judgeLiveness, type PingOutcome } from '../../../src/core/backend/liveness.js';

afterEach(() => vi.useRealTimers());

/** A ping that takes `ms` (on the fake clock) and ends with `outcome`; records the deadline it was given. */
function fakePing(ms: number, outcome: PingOutcome, deadlines: number[] = []): (timeoutMs: number) => Promise<PingOutcome> {
  return (timeoutMs) => {
    deadlines.push(timeoutMs);
    vi.setSystemTime(Date.now() + ms);
    return Promise.resolve(outcome);
  };
}

describe('judgeLiveness', () => {
  it('gives the ping the whole silence window, and a late answer is alive', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const deadlines: number[] = [];
    expect(await judgeLiveness(fakePing(5_000, 'answered', deadlines), new Traffic(), 30_000)).toBe('alive');
    expect(deadlines).toEqual([30_000]);
  });

  it('takes a backend for hung only when nothing at all arrived for the whole window', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const traffic = new Traffic();
    expect(await judgeLiveness(fakePing(30_000, 'silent'), traffic, 30_000)).toBe('hung');
  });

  it('keeps a backend that misses its ping but sent anything else within the window', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const traffic = new Traffic();
    const ping = (): Promise<PingOutcome> => {
      vi.setSystemTime(Date.now() + 20_000);
      traffic.seen(); // a response to a call, say
      vi.setSystemTime(Date.now() + 10_000);
      return Promise.resolve('silent');
    };
    expect(await judgeLiveness(ping, traffic, 30_000)).toBe('alive');
  });

  it('reports a closed session or a failed transport as gone at once, whatever the traffic', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const traffic = new Traffic();
    traffic.seen();
    expect(await judgeLiveness(fakePing(1, 'gone'), traffic, 30_000)).toBe('gone');
  });
});
