/**
 * The cluster's proof: three gateway processes on one Redis behind a round-robin client, in front of
 * one streamable-HTTP legacy backend. 1,000 MRTR calls at concurrency 50, each retry sent to a
 * different instance than its round: none lost, none answered twice, none answered with another
 * call's input. Then one instance is killed (SIGKILL) holding parked calls and a task: the survivors
 * give the expected answers once its death is known, and keep serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcessCluster, until, type ProcessCluster } from '../helpers/cluster-processes.js';
import { REDIS_URL, redisPrefix } from '../helpers/redis.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const { prefix, cleanup } = redisPrefix();
let cluster: ProcessCluster | undefined;
let children: ProcessCluster['children'] = [];
let urls: string[] = [];

beforeAll(async () => {
  cluster = await startProcessCluster({ redisUrl: REDIS_URL, keyPrefix: prefix, gateway: { tasks: { promoteAfterMs: 50 } } });
  ({ children, urls } = cluster);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  await cleanup();
}, 60_000);

async function tagged(i: number): Promise<'ok' | 'lost' | 'wrong' | 'twice'> {
  const first = urls[i % 3]!;
  const round = await post(first, 'tools/call', { name: 'tagged', arguments: { tag: `t${i}` } }, { caps: ELICIT });
  const ir = round.message['result'] as { inputRequests?: Record<string, { params: { message: string } }>; requestState?: string } | undefined;
  if (!ir?.requestState || !ir.inputRequests) return 'lost';
  const [key, request] = Object.entries(ir.inputRequests)[0]!;
  if (request.params.message !== `tag:t${i}`) return 'wrong';
  const retry = {
    name: 'tagged',
    arguments: { tag: `t${i}` },
    inputResponses: { [key]: { action: 'accept', content: { value: `v${i}` } } },
    requestState: ir.requestState,
  };
  const done = await post(urls[(i + 1) % 3]!, 'tools/call', retry, { caps: ELICIT });
  const text = (done.message['result'] as { content?: { text: string }[] } | undefined)?.content?.[0]?.text;
  if (text === undefined) return 'lost';
  if (text !== `tag=t${i} answer=v${i}`) return 'wrong';
  // The same round again, on the third instance: it was answered, and must not be answered twice.
  const again = await post(urls[(i + 2) % 3]!, 'tools/call', retry, { caps: ELICIT });
  return again.message['error'] ? 'ok' : 'twice';
}

describe('three instances behind a round-robin client', () => {
  it('answer 1,000 MRTR calls at concurrency 50, every retry on another instance: none lost, none twice, none crossed', async () => {
    const outcomes: Record<string, number> = { ok: 0, lost: 0, wrong: 0, twice: 0 };
    let next = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < 1_000) {
          const i = next++;
          outcomes[await tagged(i)]! += 1;
        }
      }),
    );
    expect(outcomes).toEqual({ ok: 1_000, lost: 0, wrong: 0, twice: 0 });
  }, 180_000);

  it('when an instance is killed holding parked calls and a task, the survivors answer once its death is known and keep serving', async () => {
    const victim = urls[0]!;
    const parked = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const r = await post(victim, 'tools/call', { name: 'tagged', arguments: { tag: `k${i}` } }, { caps: ELICIT });
        const ir = r.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
        const key = Object.keys(ir.inputRequests)[0]!;
        return {
          name: 'tagged',
          arguments: { tag: `k${i}` },
          inputResponses: { [key]: { action: 'accept', content: { value: 'x' } } },
          requestState: ir.requestState,
        };
      }),
    );
    const task = await post(victim, 'tools/call', { name: 'slow', arguments: { id: 'victim-task', ms: 60_000 } }, { caps: TASKS });
    const taskId = (task.message['result'] as { taskId: string }).taskId;
    expect((await post(urls[1]!, 'tasks/get', { taskId }, { caps: TASKS })).message['result']).toMatchObject({ status: 'working' });

    children[0]!.kill('SIGKILL');
    // The first retry and the task on two survivors, polled together, until each says what became of its
    // call: gone once the victim's heartbeat has lapsed for a whole ttl (3 × 150 ms; a shorter lapse is
    // a late beat, and the retry is told `request_state_instance` meanwhile).
    const gone = async (): Promise<boolean> => {
      const r = await post(urls[1]!, 'tools/call', parked[0]!, { caps: ELICIT });
      return (r.message['error'] as { data?: { reason?: string } } | undefined)?.data?.reason === 'request_state_gone';
    };
    const failed = async (): Promise<boolean> => {
      const r = await post(urls[2]!, 'tasks/get', { taskId }, { caps: TASKS });
      return (r.message['result'] as { error?: { data?: { reason?: string } } } | undefined)?.error?.data?.reason === 'instance_gone';
    };
    await Promise.all([until('the killed instance to be gone', () => gone().catch(() => false)), until('its task to fail', () => failed().catch(() => false))]);
    for (const retry of parked.slice(1)) {
      const r = await post(urls[2]!, 'tools/call', retry, { caps: ELICIT });
      expect(r.message['error']).toMatchObject({ data: { reason: 'request_state_gone' } });
    }
    expect((await post(urls[2]!, 'tasks/get', { taskId }, { caps: TASKS })).message['result']).toMatchObject({ status: 'failed' });
    // The survivors go on serving, retries crossing between them.
    const survivors = [urls[1]!, urls[2]!];
    const r = await post(survivors[0]!, 'tools/call', { name: 'tagged', arguments: { tag: 'after' } }, { caps: ELICIT });
    const ir = r.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(ir.inputRequests)[0]!;
    const done = await post(
      survivors[1]!,
      'tools/call',
      { name: 'tagged', arguments: { tag: 'after' }, inputResponses: { [key]: { action: 'accept', content: { value: 'ok' } } }, requestState: ir.requestState },
      { caps: ELICIT },
    );
    expect((done.message['result'] as { content: { text: string }[] }).content[0]!.text).toBe('tag=after answer=ok');
  }, 60_000);
});
