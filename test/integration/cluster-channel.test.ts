/**
 * The channel between instances, over real TCP on one real Redis (gateway/forward-channel.ts,
 * gateway/channel-server.ts): a forwarded retry goes on one channel from B to A, opened once; the
 * `CONNECT` that opens one is checked as a forward is (unsigned or replayed 403, signed for no boot of
 * A's 421 naming it, another path 400), and a channel carries only frames under its own key (a frame
 * that fails its MAC closes it); a call written on a channel that then closes is answered
 * `forward_cut` (it may have run), never sent again.
 */
import { mkdtempSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_PATH, CHANNEL_PROTOCOL, FrameReader, FrameWriter, SALT_HEADER, channelKey } from '../../src/cluster/channel-frames.js';
import { createForwarder } from '../../src/cluster/forwarder.js';
import { createMetrics, type Metrics } from '../../src/observe/metrics.js';
import { startCluster } from '../helpers/cluster.js';
import { stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { captureLog } from '../helpers/log.js';
import { redisPrefix } from '../helpers/redis.js';
import { fileHas, until } from '../helpers/until.js';
import { META_CAPS, META_VERSION, post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const { prefix, cleanup } = redisPrefix();
const callLog = join(mkdtempSync(join(tmpdir(), 'channel-')), 'calls.log');
const secret = `cluster-secret-${prefix}`;
let a: RunningGateway;
let b: RunningGateway;
const metrics: Record<string, Metrics> = {};
const logs: Record<string, ReturnType<typeof captureLog>> = {};

beforeAll(async () => {
  [a, b] = (await startCluster(['a', 'b'], {
    prefix,
    mcpServers: { legacy: stdioFixture({ FIXTURE_CALL_LOG: callLog }) },
    deps: (id) => {
      metrics[id] = createMetrics();
      logs[id] = captureLog('info');
      return { metrics: metrics[id], logger: logs[id].logger };
    },
  })) as [RunningGateway, RunningGateway];
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await cleanup();
});

/** Parks `tool` on A; the retry that answers its elicitation. */
async function parkedOnA(tool: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const parked = await post(a.url, 'tools/call', { name: tool, arguments: args }, { caps: ELICIT });
  const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
  const key = Object.keys(ir.inputRequests)[0]!;
  return { name: tool, arguments: args, inputResponses: { [key]: { action: 'accept', content: { name: 'Ada', x: 'y' } } }, requestState: ir.requestState };
}

const received = async (gw: string): Promise<string[]> =>
  (await metrics[gw]!.scrape()).text.split('\n').filter((l) => l.startsWith('mcp_gateway_forwards_total{direction="received"'));

/** A `CONNECT` to A's channel path with `headers`: its status and headers, and the socket when it opened. */
function connect(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingMessage['headers']; socket?: Socket; rest?: Buffer }> {
  const port = new URL(a.url).port;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'CONNECT', path, headers: { 'x-mcpgw-protocol': CHANNEL_PROTOCOL, ...headers }, agent: false });
    req.on('connect', (res: IncomingMessage, socket: Socket, rest: Buffer) => {
      if (res.statusCode === 200) resolve({ status: 200, headers: res.headers, socket, rest });
      else {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers });
      }
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the channel between two instances', () => {
  it('carries forwarded retries from B to A, opened once', async () => {
    for (const name of ['Ada', 'Ada']) {
      const answered = await post(b.url, 'tools/call', await parkedOnA('elicit_name'), { caps: ELICIT });
      expect(answered.message['result']).toMatchObject({ content: [{ type: 'text', text: `Hello, ${name}!` }] });
    }
    expect(logs['b']!.lines.filter((l) => l['msg'] === 'a channel to this instance is open: forwarded calls go on it')).toEqual([
      expect.objectContaining({ instance: 'a' }),
    ]);
    // Its first CONNECT was signed for no boot of A's (B had not heard it yet): 421, then signed for it.
    expect(await received('a')).toEqual([expect.stringMatching(/outcome="misdirected"\} 1$/), expect.stringMatching(/outcome="accepted"\} 2$/)]);
  });

  it('opens only for a fresh signature of this cluster, for this boot of A, and carries only frames under its key', async () => {
    expect((await connect(CHANNEL_PATH, {})).status).toBe(403);
    const signer = createForwarder({ secret, urlOf: async () => undefined, instanceId: 'b' });
    // Signed for no boot: 421, naming A's.
    const first = signer.channelHead('a', undefined);
    const misdirected = await connect(CHANNEL_PATH, first.headers);
    expect(misdirected.status).toBe(421);
    const boot = String(misdirected.headers['x-mcpgw-boot']);
    const signed = signer.channelHead('a', boot);
    expect((await connect('/elsewhere', signed.headers)).status).toBe(400);
    const opened = await connect(CHANNEL_PATH, signed.headers);
    expect(opened.status).toBe(200);
    // The same CONNECT again (captured, replayed): refused.
    expect((await connect(CHANNEL_PATH, signed.headers)).status).toBe(403);

    // Frames under the connection's key are served: a call as a caller this end names.
    const key = channelKey(secret, signed.nonce, String(opened.headers[SALT_HEADER]));
    const socket = opened.socket!;
    const reader = new FrameReader(key, 'owner', 1 << 20);
    const frames: Record<string, unknown>[] = [];
    socket.on('data', (chunk: Buffer) => frames.push(...(reader.push(chunk) as Record<string, unknown>[])));
    const closed = new Promise((r) => socket.once('close', r));
    const writer = new FrameWriter(key, 'forwarder');
    const body = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: {} } } };
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list',
    };
    socket.write(writer.frame({ k: 'call', i: 1, p: '/mcp', u: 'anonymous', sc: null, h: headers, b: JSON.stringify(body) }));
    await until('the answer frame', () => frames.length > 0);
    expect(frames[0]).toMatchObject({ k: 'json', i: 1, s: 200 });
    expect(JSON.parse(String(frames[0]!['b']))).toMatchObject({
      id: 7,
      result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'elicit_name' })]) },
    });
    // A frame whose MAC does not hold (written under another key) closes the channel.
    socket.write(
      new FrameWriter(channelKey(secret, 'another nonce', 'salt'), 'forwarder').frame({ k: 'call', i: 2, p: '/mcp', u: 'x', sc: null, h: headers, b: '{}' }),
    );
    await closed;
    expect(logs['a']!.has('a channel from another instance sent what this cluster does not sign: closed')).toBe(true);
  });

  it('answers forward_cut for a call whose channel closes on its way, and the call is not sent again', async () => {
    const retry = await parkedOnA('elicit_then_wait', { id: 'cut' });
    const asked = post(b.url, 'tools/call', retry, { caps: ELICIT });
    await until('the backend to have its answer', () => fileHas(callLog, 'answered cut'));
    a.cutOff();
    const answer = await asked;
    expect(answer.message['error']).toMatchObject({ code: -32603, data: { reason: 'forward_cut' } });
  });
});
