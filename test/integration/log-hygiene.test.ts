/**
 * The gateway's own log (one structured line per exchange, debug included) never carries requestState,
 * API keys or the payloads of elicitation answers.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    expect(log).not.toContain(secret);
    expect(log).not.toContain(requestState.slice(0, 40));
    expect(log).not.toContain(KEY);
  });
});
