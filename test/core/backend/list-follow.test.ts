/** Following a backend's list changes on a listen stream of its own: acknowledgement, changes, and the stream's end. */
import { describe, expect, it } from 'vitest';
import { followListStream } from '../../../src/core/backend/list-follow.js';
import { silentLogger } from '../../../src/log.js';
import { createDeferred } from '../../../src/util/deferred.js';

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
    }
  });
});
