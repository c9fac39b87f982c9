/**
 * An instance that stands still (SIGSTOP) long enough for the others to take it for gone ends the
 * calls it held once it runs again: their clients may have been told they are gone, and a retry must
 * not finish one of them after all. A real process, frozen and resumed; the rest of the cluster real.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcessCluster, type ProcessCluster } from '../helpers/cluster-processes.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { post, type WireReply } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
const logs: string[][] = [[], []];
let cluster: ProcessCluster | undefined;

beforeAll(async () => {
  cluster = await startProcessCluster({
    redisUrl: REDIS_URL,
    keyPrefix: prefix,
    instances: 2,
    logLevel: 'info',
    onLine: (i, line) => void logs[i]!.push(line),
  });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  await cleanup();
}, 60_000);

const reasonOf = (r: WireReply): string | undefined => (r.message['error'] as { data?: { reason?: string } } | undefined)?.data?.reason;
const textOf = (r: WireReply): string | undefined => (r.message['result'] as { content?: { text: string }[] } | undefined)?.content?.[0]?.text;
const logged = (i: number, text: string) => async (): Promise<boolean> => logs[i]!.some((l) => l.includes(text));

/** Parks `tagged` on `url`; the retry that answers it. */
async function park(url: string, tag: string): Promise<Record<string, unknown>> {
  const r = await post(url, 'tools/call', { name: 'tagged', arguments: { tag } }, { caps: ELICIT, signal: AbortSignal.timeout(20_000) });
  const ir = r.message['result'] as { inputRequests: Record<string, unknown>; requestState: string };
  const key = Object.keys(ir.inputRequests)[0]!;
  return { name: 'tagged', arguments: { tag }, inputResponses: { [key]: { action: 'accept', content: { value: 'late' } } }, requestState: ir.requestState };
}

describe('an instance taken for gone while it stood still', () => {
  it('ends the calls it held when it runs again, and goes on serving new ones', async () => {
    const { urls, children } = cluster!;
    const retry = await park(urls[0]!, 'frozen');
    children[0]!.kill('SIGSTOP');
    try {
      await until('the other instance to take it for gone', logged(1, 'an instance is gone'), 30_000);
    } finally {
      children[0]!.kill('SIGCONT');
    }
    await until('the resumed instance to end what it held', logged(0, 'the other instances took this one for gone'), 30_000);
    const late = await post(urls[0]!, 'tools/call', retry, { caps: ELICIT, signal: AbortSignal.timeout(20_000) });
    expect(reasonOf(late), JSON.stringify(late.message)).toBe('request_state_gone');
    // Still an instance of the cluster: a new call parks on it and finishes through the other one.
    const fresh = await park(urls[0]!, 'after');
    expect(textOf(await post(urls[1]!, 'tools/call', fresh, { caps: ELICIT, signal: AbortSignal.timeout(20_000) }))).toBe('tag=after answer=late');
  }, 90_000);
});
