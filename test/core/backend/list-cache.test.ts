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
    expect(cache.cached('tools')).toBeUndefined();
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
});
