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
