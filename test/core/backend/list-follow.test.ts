/** Following a backend's list changes on a listen stream of its own: acknowledgement, changes, and the stream's end. */
import { describe, expect, it } from 'vitest';
import { followListStream } from '../../../src/core/backend/list-follow.js';
import { silentLogger } from '../../../src/log.js';
import { createDeferred } from '../../../src/util/deferred.js';
import { quietFor, until } from '../../helpers/until.js';

/** A scripted listen stream: `notify` sends a notification, `end` ends it (or fails it). */
function scripted() {
  let notify!: (message: Record<string, unknown>) => void;
  const ended = createDeferred<unknown>();
  const sent: Record<string, unknown>[] = [];
  const open = (params: Record<string, unknown>, onnotification: (message: Record<string, unknown>) => void): Promise<unknown> => {
    sent.push(params);
    notify = onnotification;
    return ended.promise;
  };
  return { open, sent, notify: (m: Record<string, unknown>) => notify(m), ended };
}

describe('followListStream', () => {
  it('asks for the kinds, resolves at the acknowledgement, hands on each change, and says when an acknowledged stream ends', async () => {
    const s = scripted();
    const changes: string[] = [];
    let ends = 0;
    let acked = false;
    const following = followListStream({
      kinds: new Set(['tools', 'prompts'] as const),
      signal: new AbortController().signal,
      follow: { onEnd: () => ends++ },
      log: silentLogger,
      open: s.open,
      onChange: (k) => changes.push(k),
    }).then(() => (acked = true));
    expect(s.sent).toEqual([{ notifications: { toolsListChanged: true, promptsListChanged: true } }]);
    s.notify({ method: 'notifications/tools/list_changed' });
    await Promise.resolve();
    expect(acked).toBe(false);
    s.notify({ method: 'notifications/subscriptions/acknowledged' });
    await following;
    s.notify({ method: 'notifications/prompts/list_changed' });
    s.notify({ method: 'notifications/message' });
    expect(changes).toEqual(['tools', 'prompts']);
    s.ended.resolve({});
    await s.ended.promise;
    await Promise.resolve();
    expect(ends).toBe(1);
  });

  it('resolves without onEnd when the stream fails before its acknowledgement, or ends because it was aborted', async () => {
    for (const aborted of [false, true]) {
      const s = scripted();
      const stop = new AbortController();
      let ends = 0;
      const following = followListStream({
        kinds: new Set(['tools'] as const),
        signal: stop.signal,
        follow: { onEnd: () => ends++ },
        log: silentLogger,
        open: s.open,
        onChange: () => undefined,
      });
      if (aborted) {
        s.notify({ method: 'notifications/subscriptions/acknowledged' });
        stop.abort();
      }
      s.ended.reject(new Error('gone'));
      await following;
      await s.ended.promise.catch(() => undefined);
      await Promise.resolve();
      expect(ends, aborted ? 'aborted' : 'failed before the ack').toBe(0);
      stop.abort();
    }
  });

  it('opens a stream it could not open again, backing off, until acknowledged; then tells of a change of every kind', async () => {
    const stop = new AbortController();
    const opened: number[] = [];
    const changes: string[] = [];
    let notify!: (message: Record<string, unknown>) => void;
    const live = createDeferred<unknown>();
    const started = Date.now();
    const following = followListStream({
      kinds: new Set(['tools', 'resources'] as const),
      signal: stop.signal,
      follow: {},
      log: silentLogger,
      retry: { firstMs: 10, maxMs: 40 },
      open: (_params, onnotification) => {
        opened.push(Date.now() - started);
        if (opened.length < 4) return Promise.reject(new Error('HTTP 429: limit of listen streams reached'));
        notify = onnotification;
        return live.promise;
      },
      onChange: (k) => changes.push(k),
    });
    await following; // resolved at the first failure: the caller's stream goes on meanwhile
    await until('the fourth try', () => opened.length === 4);
    notify({ method: 'notifications/subscriptions/acknowledged' });
    expect(changes).toEqual(['tools', 'resources']);
    notify({ method: 'notifications/tools/list_changed' });
    expect(changes).toEqual(['tools', 'resources', 'tools']);
    // 10, 20 and 40 ms between the tries
    expect(opened[3]! - opened[0]!).toBeGreaterThanOrEqual(60);
    stop.abort();
    live.reject(new Error('aborted'));
  });

  it('does not try again a server that has no subscriptions/listen (-32601)', async () => {
    let tries = 0;
    await followListStream({
      kinds: new Set(['tools'] as const),
      signal: new AbortController().signal,
      follow: {},
      log: silentLogger,
      retry: { firstMs: 5, maxMs: 5 },
      open: () => (tries++, Promise.reject(Object.assign(new Error('Method not found'), { code: -32601 }))),
      onChange: () => undefined,
    });
    await quietFor(50);
    expect(tries).toBe(1);
  });

  it("stops trying once the caller's stream ends", async () => {
    const stop = new AbortController();
    let tries = 0;
    await followListStream({
      kinds: new Set(['tools'] as const),
      signal: stop.signal,
      follow: {},
      log: silentLogger,
      retry: { firstMs: 5, maxMs: 5 },
      open: () => (tries++, Promise.reject(new Error('down'))),
      onChange: () => undefined,
    });
    await until('a few tries', () => tries >= 3);
    stop.abort();
    const after = tries;
    await quietFor(50);
    expect(tries).toBeLessThanOrEqual(after + 1);
  });
});
