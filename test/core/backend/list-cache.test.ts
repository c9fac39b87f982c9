import { describe, expect, it } from 'vitest';
import { ListCache } from '../../../src/core/backend/list-cache.js';

describe('ListCache', () => {
  it('shares concurrent fetches, serves from cache, and refetches on demand at most once a second', async () => {
    let fetches = 0;
    const cache = new ListCache(60_000, async () => [{ n: ++fetches }]);
    const [a, b] = await Promise.all([cache.get('tools'), cache.get('tools')]);
    expect(a).toBe(b);
    expect(fetches).toBe(1);
    await cache.get('tools', true);
    expect(fetches).toBe(1); // younger than the refresh floor
    cache.invalidate('tools');
    expect(cache.cached('tools')).toEqual([{ n: 1 }]); // stale, still known until fetched again
    expect(await cache.get('tools')).toEqual([{ n: 2 }]);
  });

  it('does not cache failures', async () => {
    let fail = true;
    const cache = new ListCache(60_000, async () => {
      if (fail) throw new Error('down');
      return [];
    });
    await expect(cache.get('prompts')).rejects.toThrow('down');
    fail = false;
    await expect(cache.get('prompts')).resolves.toEqual([]);
  });

  it('keeps one list per view and invalidates a kind in every view (the last known list stays readable)', async () => {
    const seen: string[] = [];
    const cache = new ListCache(60_000, async (kind, view) => {
      seen.push(`${kind}@${view}`);
      return [{ view }];
    });
    expect(await cache.get('tools', false, '{}')).toEqual([{ view: '{}' }]);
    expect(await cache.get('tools', false, '{"elicitation":{}}')).toEqual([{ view: '{"elicitation":{}}' }]);
    expect(cache.cached('tools', '{"elicitation":{}}')).toEqual([{ view: '{"elicitation":{}}' }]);
    await cache.get('prompts', false, '{}');
    cache.invalidate('tools');
    expect(cache.cached('tools', '{}')).toEqual([{ view: '{}' }]);
    await cache.get('tools', false, '{"elicitation":{}}');
    await cache.get('tools', false, '{}');
    await cache.get('prompts', false, '{}');
    expect(seen).toEqual(['tools@{}', 'tools@{"elicitation":{}}', 'prompts@{}', 'tools@{"elicitation":{}}', 'tools@{}']);
  });

  it('does not keep a list whose fetch began before an invalidation', async () => {
    let release!: () => void;
    const cache = new ListCache(60_000, () => new Promise((r) => (release = () => r([{ old: true }]))));
    const inFlight = cache.get('tools');
    cache.invalidate('tools');
    release();
    expect(await inFlight).toEqual([{ old: true }]);
    expect(cache.cached('tools')).toBeUndefined();
  });
});
