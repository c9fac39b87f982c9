/**
 * Bad input gets a clear JSON-RPC error with the right code, never a crash, a hang or unbounded
 * memory: an oversized body is cut off while it streams (413), method names that are Object.prototype
 * keys are unknown methods (-32601), absurdly nested arguments are -32602, listen streams are bounded.
 * Driven in process (`gateway.fetch`), no socket needed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/http/request-body.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { assertWireResponse, inProcess, META_CAPS, META_VERSION, post, readReply } from '../helpers/wire.js';

let gw: RunningGateway;
let fetch: ReturnType<typeof inProcess>;
beforeAll(async () => {
  gw = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { maxListenPerPrincipal: 2 } });
  fetch = inProcess(gw.gateway);
});
afterAll(async () => gw?.close());

const headers = (method: string): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': method,
});

describe('bad input', () => {
  it('cuts a chunked body off at the limit while it streams and answers 413 with a JSON-RPC error', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= 64 * 1024 * 1024) return controller.close();
        pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(gw.url, { method: 'POST', headers: headers('tools/list'), body, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/Payload Too Large/) } });
    expect(pulled).toBeLessThanOrEqual(MAX_BODY_BYTES + 2 * chunk.byteLength);
  });

  it('counts the limit in bytes, not characters', async () => {
    const text = 'é'.repeat(MAX_BODY_BYTES / 2 + 10); // fewer characters than the limit, more bytes
    const res = await fetch(gw.url, {
      method: 'POST',
      headers: headers('tools/list'),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { x: text } }),
    });
    expect(res.status).toBe(413);
  });

  it('answers an unknown path with 404 naming every path served, health checks included', async () => {
    const res = await fetch(new URL('/nowhere', gw.url));
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { code: number; message: string } };
    expect(body.error.code).toBe(-32601);
    for (const path of ['/mcp', '/sse', '/healthz', '/readyz']) expect(body.error.message).toContain(path);
  });

  it('answers -32601 for method names that are Object.prototype keys', async () => {
    for (const method of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      const r = await post(gw.url, method, {}, { fetch });
      expect(r.status, method).toBe(404);
      expect(r.message['error'], method).toMatchObject({ code: -32601 });
    }
  });

  it('answers -32602 for arguments nested thousands of levels deep', async () => {
    const deep = `${'{"a":'.repeat(5_000)}"leaf"${'}'.repeat(5_000)}`;
    const meta = JSON.stringify({ [META_VERSION]: '2026-07-28', [META_CAPS]: {} });
    const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","deep":${deep}},"_meta":${meta}}}`;
    const r = await readReply(await fetch(gw.url, { method: 'POST', headers: { ...headers('tools/call'), 'mcp-name': 'echo' }, body }));
    assertWireResponse('tools/call', r.message);
    expect(r.message['error']).toMatchObject({ code: -32602, message: expect.stringMatching(/deeper than/) });
  });

  it('bounds the subscriptions/listen streams a principal may hold open', async () => {
    const open = async () => {
      const res = await fetch(gw.url, {
        method: 'POST',
        headers: headers('subscriptions/listen'),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'l',
          method: 'subscriptions/listen',
          params: { notifications: { toolsListChanged: true }, _meta: { [META_VERSION]: '2026-07-28', [META_CAPS]: {} } },
        }),
      });
      return res;
    };
    const first = await open();
    const second = await open();
    expect([first.status, second.status]).toEqual([200, 200]);
    const refused = await open();
    expect(refused.status).toBe(429);
    const third = await readReply(refused);
    expect(third.message['error']).toMatchObject({ code: -32000, data: { reason: 'principal_limit', limit: 'gateway.maxListenPerPrincipal', max: 2 } });
    await first.body?.cancel();
    await new Promise((r) => setImmediate(r));
    const again = await open();
    expect(again.status).toBe(200);
    await Promise.all([second.body?.cancel(), again.body?.cancel()]);
  });
});
