/**
 * Several backends behind one gateway: deterministic aggregation with `<server>__<name>` names, routing
 * to the owning backend, and a backend that is down failing only its own tools.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { startLegacyHttpServer, type LegacyHttpServer } from '../fixtures/legacy-http.js';
import { assertWireResponse, post } from '../helpers/wire.js';

let web: LegacyHttpServer;
let gw: RunningGateway;

beforeAll(async () => {
  web = await startLegacyHttpServer('web-fixture');
  gw = await startGateway({
    mcpServers: {
      local: stdioFixture({ FIXTURE_NAME: 'local-fixture' }),
      web: { url: web.url },
      broken: { command: process.execPath, args: ['-e', 'process.exit(1)'] },
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await web?.close();
});

const names = async (method: string, field: string): Promise<string[]> => {
  const r = await post(gw.url, method);
  assertWireResponse(method, r.message);
  return ((r.message['result'] as Record<string, { name: string }[]>)[field] ?? []).map((t) => t.name);
};

describe('aggregation across backends', () => {
  it('prefixes tool and prompt names with the server name, in configuration order, deterministically', async () => {
    const tools = await names('tools/list', 'tools');
    const local = tools.filter((n) => n.startsWith('local__'));
    const remote = tools.filter((n) => n.startsWith('web__'));
    expect(local).toContain('local__echo');
    expect(remote).toContain('web__echo');
    expect(tools.indexOf('local__echo')).toBeLessThan(tools.indexOf('web__echo'));
    expect(local.length + remote.length).toBe(tools.length);
    expect(await names('tools/list', 'tools')).toEqual(tools);
    const prompts = await names('prompts/list', 'prompts');
    expect(prompts).toEqual(expect.arrayContaining(['local__plain_prompt', 'web__plain_prompt']));
  });

  it('routes calls to the backend that owns the name', async () => {
    const a = await post(gw.url, 'tools/call', { name: 'local__echo', arguments: { text: 'to-local' } });
    const b = await post(gw.url, 'tools/call', { name: 'web__echo', arguments: { text: 'to-web' } });
    expect(a.message['result']).toMatchObject({ content: [{ text: 'to-local' }] });
    expect(b.message['result']).toMatchObject({ content: [{ text: 'to-web' }] });
    const p = await post(gw.url, 'prompts/get', { name: 'web__plain_prompt', arguments: { topic: 'x' } });
    expect(JSON.stringify(p.message['result'])).toContain('About x');
    expect((await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } })).message['error']).toMatchObject({ code: -32602 });
  });

  it('routes MRTR rounds through the owning backend', async () => {
    const r1 = await post(gw.url, 'tools/call', { name: 'web__elicit_name' }, { caps: { elicitation: {} } });
    const { requestState } = r1.message['result'] as { requestState: string };
    const r2 = await post(
      gw.url,
      'tools/call',
      { name: 'web__elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'Wu' } } }, requestState },
      { caps: { elicitation: {} } },
    );
    expect(r2.message['result']).toMatchObject({ content: [{ text: 'Hello, Wu!' }] });
  });

  it('keeps serving when one backend is down, and fails only that backend\u2019s tools', async () => {
    expect(gw.gateway.backends.find((b) => b.name === 'broken')!.up).toBe(false);
    expect((await names('tools/list', 'tools')).some((n) => n.startsWith('broken__'))).toBe(false);
    await web.close();
    const r = await post(gw.url, 'tools/call', { name: 'web__echo', arguments: { text: 'x' } });
    assertWireResponse('tools/call', r.message);
    expect(r.message['error']).toMatchObject({ code: -32603 });
    expect(String((r.message['error'] as { message: string }).message)).toMatch(/backend|unavailable|closed/i);
    const ok = await post(gw.url, 'tools/call', { name: 'local__echo', arguments: { text: 'alive' } });
    expect(ok.message['result']).toMatchObject({ content: [{ text: 'alive' }] });
  });
});
