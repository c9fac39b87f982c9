import { describe, expect, it } from 'vitest';
import { background, backgroundFailures } from '../../src/util/background.js';
import { quietFor } from '../helpers/until.js';

function recorder(): { lines: object[]; warn(obj: object): void } {
  const lines: object[] = [];
  return { lines, warn: (obj) => lines.push(obj) };
}

describe('background', () => {
  it('logs a rejected promise once, with what it was doing, and never rethrows', async () => {
    const log = recorder();
    const before = backgroundFailures();
    background('unregister call', Promise.reject(new Error('ClientOfflineError')), log);
    await new Promise((r) => setImmediate(r));
    expect(log.lines).toEqual([{ what: 'unregister call', err: 'ClientOfflineError' }]);
    expect(backgroundFailures()).toBe(before + 1);
  });

  it('counts a function that throws before returning a promise as a failure', async () => {
    const log = recorder();
    background(
      'sync throw',
      () => {
        throw new Error('boom');
      },
      log,
    );
    await new Promise((r) => setImmediate(r));
    expect(log.lines).toEqual([{ what: 'sync throw', err: 'boom' }]);
  });

  it('says nothing when the work succeeds', async () => {
    const log = recorder();
    background('fine', async () => 1, log);
    await new Promise((r) => setImmediate(r));
    expect(log.lines).toEqual([]);
  });

  it('survives a logger that throws', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      background('x', Promise.reject(new Error('y')), {
        warn() {
          throw new Error('logger down');
        },
      });
      await quietFor(10); // a negative check: an unhandled rejection would have been reported by now
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
