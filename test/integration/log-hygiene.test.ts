/**
 * The gateway's own log (one structured line per exchange; at debug, one per exchange with the backend)
 * never carries requestState, API keys or the payloads of elicitation answers.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { post } from '../helpers/wire.js';

const KEY = 'secret-api-key-0123456789';
const lines: string[] = [];
let gw: RunningGateway;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  gw = await startGateway(
    { mcpServers: { legacy: stdioFixture() }, gateway: { apiKeys: [{ principal: 'p', key: KEY }] } },
    { logger: pino({ level: 'debug' }, sink) },
  );
});
afterAll(async () => gw?.close());

describe('log hygiene', () => {
  it('logs what a backend printed on stdout that is no message for it as an error, without quoting it', async () => {
    const echoed = 'ECHOED-ANSWER-9d3f';
    const printed = 'PRINTED-TOKEN-51ac';
    const stray = [
      JSON.stringify({ jsonrpc: '2.0', id: 4242, result: { content: [{ type: 'text', text: `Hello, ${echoed}!` }] } }),
      `token=${printed} starting up`,
    ];
    const own: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        own.push(chunk.toString());
        done();
      },
    });
    const chatty = await startGateway(
      { mcpServers: { chatty: stdioFixture({ FIXTURE_STRAY_STDOUT: stray.join('\n') }) } },
      { logger: pino({ level: 'debug' }, sink) },
    );
    try {
      expect((await post(chatty.url, 'tools/call', { name: 'echo', arguments: { text: 'hi' } })).message['result']).toMatchObject({
        content: [{ text: 'hi' }],
      });
      const errors = own
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l['msg'] === 'backend transport error')
        .map((l) => l['err']);
      expect(errors).toEqual(expect.arrayContaining(['Received a response for an unknown message ID: 4242', expect.stringMatching(/not valid JSON/)]));
      expect(own.join('')).not.toContain(echoed);
      expect(own.join('')).not.toContain(printed);
    } finally {
      await chatty.close();
    }
  });

  it('logs the exchange but not the answer, the state or the key', async () => {
    const auth = { caps: { elicitation: {} }, headers: { authorization: `Bearer ${KEY}` } };
    const r1 = await post(gw.url, 'tools/call', { name: 'elicit_name' }, auth);
    const { requestState } = r1.message['result'] as { requestState: string };
    const secret = 'TOP-SECRET-ANSWER-42';
    const r2 = await post(
      gw.url,
      'tools/call',
      { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: secret } } }, requestState },
      auth,
    );
    expect(r2.message['result']).toMatchObject({ content: [{ text: `Hello, ${secret}!` }] });
    const log = lines.join('');
    expect(log).toMatch(/"method":"tools\/call"/);
    // At debug, each exchange with the backend: method, duration, outcome (never a payload).
    const debug = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['level'] === 20);
    expect(debug).toContainEqual(expect.objectContaining({ msg: 'backend request', method: 'tools/call', outcome: 'result', ms: expect.any(Number) }));
    expect(debug).toContainEqual(expect.objectContaining({ msg: 'backend asked', method: 'elicitation/create', outcome: 'answered' }));
    expect(log).not.toContain(secret);
    expect(log).not.toContain(requestState.slice(0, 40));
    expect(log).not.toContain(KEY);
  });

  it("logs a legacy client session's requests too, without the answer or the key", async () => {
    const secret = 'LEGACY-SECRET-ANSWER-7';
    const client = new Client({ name: 'legacy-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: secret } }));
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    try {
      const before = lines.length;
      expect(await client.callTool({ name: 'elicit_name' })).toMatchObject({ content: [{ text: `Hello, ${secret}!` }] });
      const log = lines.slice(before).join('');
      expect(log).toMatch(/"front":"legacy".*"method":"tools\/call","name":"elicit_name"/);
      expect(log).not.toContain(secret);
      expect(log).not.toContain(KEY);
    } finally {
      await client.close();
    }
  });
});
