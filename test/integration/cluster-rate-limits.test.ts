/**
 * Rate limits across a cluster (issue 29): two gateway instances on the tests' Redis share each
 * principal's request budget (one Lua script per take, on Redis TIME) and its concurrent-call bound;
 * a request forwarded to the instance that holds its legacy session is charged once, where it arrived.
 * Real HTTP on 127.0.0.1; the buckets refill at one a minute, so nothing comes back during a test.
 */
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { twoInstances } from '../helpers/cluster.js';
import { REDIS_URL } from '../helpers/redis.js';
import { openLegacySession, post, postInSession, readReply, type WireReply } from '../helpers/wire.js';

const key = (name: string) => `${name}-key-0123456789abcdef`;
const as = (name: string) => ({ caps: { elicitation: {} }, headers: { authorization: `Bearer ${key(name)}` } });
const cluster = twoInstances({
  apiKeys: ['alice', 'bob', 'carol', 'dave'].map((p) => ({ principal: p, key: key(p) })),
  rateLimits: { requestsPerMinute: 1, burst: 4, maxConcurrentCalls: 1 },
});

const status = (r: WireReply) => r.status;

describe('rate limits on two instances sharing Redis', () => {
  it('share one request budget: requests alternating between the instances exhaust it, another principal is still served', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push(status(await post([cluster.a, cluster.b][i % 2]!.url, 'tools/list', {}, as('alice'))));
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    expect(status(await post(cluster.a.url, 'tools/list', {}, as('bob')))).toBe(200);
    expect(status(await post(cluster.b.url, 'tools/list', {}, as('bob')))).toBe(200);
    // The bucket is one key under the cluster's prefix, with a TTL.
    const redis = createClient({ url: REDIS_URL });
    await redis.connect();
    try {
      expect(await redis.pTTL(`${cluster.prefix}rate:req:alice`)).toBeGreaterThan(0);
    } finally {
      await redis.close();
    }
  });

  it('share the concurrent-call bound: a call in flight on one instance refuses another on the other', async () => {
    const parked = await post(cluster.a.url, 'tools/call', { name: 'elicit_name' }, as('carol'));
    const ir = parked.message['result'] as { resultType: string; requestState: string };
    expect(ir.resultType).toBe('input_required');
    const refused = await post(cluster.b.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, as('carol'));
    expect(refused.status).toBe(429);
    expect(refused.message['error']).toMatchObject({ data: { reason: 'rate_limited', limit: 'gateway.rateLimits.maxConcurrentCalls' } });
    const answer = { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };
    expect((await post(cluster.a.url, 'tools/call', answer, as('carol'))).message['result']).toMatchObject({ resultType: 'complete' });
    const now = await post(cluster.b.url, 'tools/call', { name: 'echo', arguments: { text: 'y' } }, as('carol'));
    expect(now.message['result']).toBeDefined();
  });

  it('charge a request forwarded to the instance holding its session once, where it arrived', async () => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key('dave')}` };
    const sid = await openLegacySession(cluster.a.url, headers); // 1 of 4
    const statuses: number[] = [];
    for (let id = 1; id <= 4; id++) {
      const r = await readReply(await postInSession(cluster.b.url, sid, 'tools/list', { id, headers: { authorization: `Bearer ${key('dave')}` } }));
      statuses.push(r.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
