/**
 * subscriptions/listen: acknowledgement first, list changes a backend announces fanned out to the
 * streams that asked for them (tagged with the subscription id), nothing unrequested, and a final
 * result when the gateway shuts down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { openListen as listen, post } from '../helpers/wire.js';

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({ mcpServers: { legacy: stdioFixture() } });
});
afterAll(async () => gw?.close());

describe('subscriptions/listen', () => {
  it('advertises listChanged in server/discover', async () => {
    const r = await post(gw.url, 'server/discover');
    expect(r.message['result']).toMatchObject({ capabilities: { tools: { listChanged: true } } });
  });

  it('acknowledges first, then delivers only the requested list changes, tagged with the subscription id', async () => {
    const tools = await listen(gw.url, 41, { toolsListChanged: true, resourceSubscriptions: ['test://static'] });
    const prompts = await listen(gw.url, 42, { promptsListChanged: true });
    await tools.waitFor(1);
    await prompts.waitFor(1);
    expect(tools.messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } },
    });
    await post(gw.url, 'tools/call', { name: 'trigger_tool_change', arguments: {} });
    await tools.waitFor(2);
    expect(tools.messages[1]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } },
    });
    // A later prompts change is the barrier: a tools change wrongly sent to the prompts stream would
    // be on it before this one (one stream, in order).
    await post(gw.url, 'tools/call', { name: 'trigger_prompt_change', arguments: {} });
    await prompts.waitFor(2);
    expect(prompts.messages.map((m) => m['method'])).toEqual(['notifications/subscriptions/acknowledged', 'notifications/prompts/list_changed']);
    tools.close();
    prompts.close();
  });

  it('ends open streams with a final result when the gateway shuts down', async () => {
    const other = await startGateway({ mcpServers: { legacy: stdioFixture() } });
    const s = await listen(other.url, 7, { toolsListChanged: true });
    await s.waitFor(1);
    await other.close();
    await s.waitFor(2);
    expect(s.messages[1]).toMatchObject({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 7 } } });
  });
});
