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
import { CHANNEL_PATH, CHANNEL_PROTOCOL, FrameReader, FrameWriter, SALT_HEADER, channelKey, type Frame } from '../../src/cluster/channel-frames.js';
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
const logDir = mkdtempSync(join(tmpdir(), 'channel-'));
const callLog = join(logDir, 'calls.log');
const cancelLog = join(logDir, 'cancel.log');
const secret = `cluster-secret-${prefix}`;
let a: RunningGateway;
let b: RunningGateway;
const metrics: Record<string, Metrics> = {};
const logs: Record<string, ReturnType<typeof captureLog>> = {};

beforeAll(async () => {
  [a, b] = (await startCluster(['a', 'b'], {
    prefix,
    mcpServers: { legacy: stdioFixture({ FIXTURE_CALL_LOG: callLog, FIXTURE_CANCEL_LOG: cancelLog }) },
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

/** The headers of a 2026-07-28 request for `method` (and the tool it names). */
const wireHeaders = (method: string, name?: string): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': method,
  ...(name !== undefined ? { 'mcp-name': name } : {}),
});

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
    const frames: Frame[] = [];
    socket.on('data', (chunk: Buffer) => frames.push(...reader.push(chunk)));
    const closed = new Promise((r) => socket.once('close', r));
    const writer = new FrameWriter(key, 'forwarder');
    const body = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: {} } } };
    const headers = wireHeaders('tools/list');
    socket.write(writer.frame({ k: 'call', i: 1, p: '/mcp', u: 'anonymous', sc: null, h: headers }, JSON.stringify(body)));
    await until('the answer frame', () => frames.length > 0);
    expect(frames[0]!.head).toMatchObject({ k: 'json', i: 1, s: 200 });
    expect(JSON.parse(frames[0]!.body.toString())).toMatchObject({
      id: 7,
      result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'elicit_name' })]) },
    });
    // A frame whose MAC does not hold (written under another key) closes the channel.
    socket.write(
      new FrameWriter(channelKey(secret, 'another nonce', 'salt'), 'forwarder').frame({ k: 'call', i: 2, p: '/mcp', u: 'x', sc: null, h: headers }, '{}'),
    );
    await closed;
    expect(logs['a']!.has('a channel from another instance sent what this cluster does not take: closed')).toBe(true);
  });

  it('streams an answer that becomes SSE (progress) back as it comes, and ends it', async () => {
    const parked = await post(a.url, 'tools/call', { name: 'elicit_then_progress', arguments: { steps: 3 } }, { caps: ELICIT, meta: { progressToken: 'p1' } });
    const ir = parked.message['result'] as { requestState: string; inputRequests: Record<string, unknown> };
    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = {
      name: 'elicit_then_progress',
      arguments: { steps: 3 },
      inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
      requestState: ir.requestState,
    };
    const answered = await post(b.url, 'tools/call', retry, { caps: ELICIT, meta: { progressToken: 'p1' } });
    expect(answered.contentType).toContain('text/event-stream');
    expect(answered.notifications.map((n) => (n['params'] as { progress: number }).progress)).toEqual([1, 2, 3]);
    expect(answered.message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
  });

  it('takes a body of any spelling up to the client limit: a padded one does not close the channel the others are on', async () => {
    const victim = await parkedOnA('elicit_then_work', { ms: 1_500 });
    const working = post(b.url, 'tools/call', victim, { caps: ELICIT });
    // Valid JSON, 2.5 MB of line breaks: twice as long once escaped in a JSON string.
    const padded = await parkedOnA('elicit_name');
    const res = await fetch(b.url, {
      method: 'POST',
      headers: wireHeaders('tools/call', 'elicit_name'),
      body: `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":${JSON.stringify({ ...padded, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: ELICIT } })}${'\n'.repeat(2_500_000)}}`,
    });
    expect(((await res.json()) as { result?: unknown }).result).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
    expect((await working).message['result']).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada!' }] });
  });

  it('leaves no socket behind for a CONNECT it refuses, and ends a call whose forwarding end closed its channel', async () => {
    const count = (): Promise<number> => new Promise((r, j) => a.server.getConnections((e, n) => (e ? j(e) : r(n))));
    const before = await count();
    for (let i = 0; i < 5; i++) expect((await connect(CHANNEL_PATH, {})).status).toBe(403);
    await until('the refused sockets to be gone', async () => (await count()) <= before);

    // A channel whose forwarding end sends its FIN (half-closes) while a call on it works: the owner
    // closes its end too, and the call is cancelled as for a client that leaves.
    const signer = createForwarder({ secret, urlOf: async () => undefined, instanceId: 'b' });
    const boot = String((await connect(CHANNEL_PATH, signer.channelHead('a', undefined).headers)).headers['x-mcpgw-boot']);
    const signed = signer.channelHead('a', boot);
    const opened = await connect(CHANNEL_PATH, signed.headers);
    const writer = new FrameWriter(channelKey(secret, signed.nonce, String(opened.headers[SALT_HEADER])), 'forwarder');
    const retry = await parkedOnA('elicit_then_wait', { id: 'half' });
    const body = { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { ...retry, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: ELICIT } } };
    const headers = wireHeaders('tools/call', 'elicit_then_wait');
    const socket = opened.socket!;
    socket.write(writer.frame({ k: 'call', i: 1, p: '/mcp', u: 'anonymous', sc: null, h: headers }, JSON.stringify(body)));
    await until('the backend to have its answer', () => fileHas(callLog, 'answered half'));
    socket.end();
    await until('the call to be cancelled on its backend', () => fileHas(cancelLog, 'cancelled half'));
    socket.destroy();
  });

  it('answers forward_cut for a call whose channel closes on its way, and the call is not sent again', async () => {
    const retry = await parkedOnA('elicit_then_wait', { id: 'cut' });
    const asked = post(b.url, 'tools/call', retry, { caps: ELICIT });
    await until('the backend to have its answer', () => fileHas(callLog, 'answered cut'));
    a.cutOff();
    const answer = await asked;
    expect(answer.message['error']).toMatchObject({ code: -32603, data: { reason: 'forward_cut' } });
    const sent = (await metrics['b']!.scrape()).text.split('\n').filter((l) => l.startsWith('mcp_gateway_forwards_total{direction="sent",outcome="cut"}'));
    expect(sent).toEqual([expect.stringMatching(/ 1$/)]);
  });
});
