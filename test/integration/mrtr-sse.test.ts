/**
 * MRTR over a legacy HTTP+SSE backend (the deprecated 2024-11-05 transport): nothing on that wire says
 * which call a backend request belongs to, so each input-capable call holds a session of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, firstText, startGateway, wireChecked, wireStats, wireViolations, type RunningGateway } from '../helpers/gateway.js';
import { startLegacySseServer } from '../fixtures/legacy-sse.js';

let backend: Awaited<ReturnType<typeof startLegacySseServer>>;
let gw: RunningGateway;

beforeAll(async () => {
  backend = await startLegacySseServer();
  gw = await startGateway({ mcpServers: { old: { url: backend.url, transport: 'sse' } }, gateway: { maxSessionsPerBackend: 4, sessionWaitMs: 60_000 } });
});
afterAll(async () => {
  await gw?.close();
  await backend?.close();
});

describe('MRTR over an HTTP+SSE legacy backend', () => {
  it('completes elicitation rounds and keeps 20 concurrent answers with their calls', async () => {
    const client = await connectClient(gw.url, { elicitation: {} });
    client.setRequestHandler('elicitation/create', async (req) => {
      const msg = String(req.params.message);
      return { action: 'accept', content: { name: 'Sam', color: 'teal', value: msg.replace(/^tag:/, '') } };
    });
    expect(firstText(await client.callTool({ name: 'elicit_two', arguments: {} }))).toBe('Sam likes teal');
    const texts = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.callTool({ name: 'tagged', arguments: { tag: `s${i}` } }, { timeout: 60_000 }).then(firstText)),
    );
    texts.forEach((t, i) => expect(t).toBe(`tag=s${i} answer=s${i}`));
    await client.close();
    await wireChecked(); // the replies' checks read their bodies after the clients did
    expect(wireViolations).toEqual([]);
    expect(wireStats.checked).toBeGreaterThan(0);
  });
});
