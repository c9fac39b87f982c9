import { describe, expect, it } from 'vitest';
import { createForwarder } from '../../src/cluster/forwarder.js';

/** A forwarded request as `send` builds it, captured instead of sent. */
async function signed(now: number, secret = 'secret-one', body = '{"a":1}'): Promise<Request> {
  let captured: Request | undefined;
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (url: URL, init: RequestInit) => {
    captured = new Request(url, init);
    return new Response('{}', { headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  try {
    const fwd = createForwarder({ secret, urlOf: async () => 'http://127.0.0.1:1', now: () => now });
    await fwd.send('other', '/mcp', new Request('http://gw/mcp', { method: 'POST', headers: { authorization: 'Bearer k', 'mcp-name': 'x' }, body }), body);
  } finally {
    globalThis.fetch = realFetch;
  }
  return captured!;
}

describe('forwarder signatures', () => {
  it('accepts its own fresh signature, naming the public path, and passes the caller headers along', async () => {
    const req = await signed(1_000_000);
    expect(new URL(req.url).pathname).toBe('/_cluster/forward');
    expect(req.headers.get('authorization')).toBe('Bearer k');
    const verifier = createForwarder({ secret: 'secret-one', urlOf: async () => undefined, now: () => 1_000_500 });
    expect(verifier.verify(req, '{"a":1}')).toBe('/mcp');
  });

  it('refuses another secret, another body, an old signature, and no signature', async () => {
    const req = await signed(1_000_000);
    const at = (now: number, secret = 'secret-one') => createForwarder({ secret, urlOf: async () => undefined, now: () => now });
    expect(at(1_000_000, 'secret-two').verify(req, '{"a":1}')).toBeUndefined();
    expect(at(1_000_000).verify(req, '{"a":2}')).toBeUndefined();
    expect(at(1_000_000 + 31_000).verify(req, '{"a":1}')).toBeUndefined();
    expect(at(1_000_000).verify(new Request('http://x', { method: 'POST' }), '')).toBeUndefined();
  });

  it('does not forward to an instance it has no URL for', async () => {
    const fwd = createForwarder({ secret: 's', urlOf: async () => undefined });
    expect(await fwd.send('gone', '/mcp', new Request('http://gw/mcp', { method: 'POST', body: '{}' }), '{}')).toBeUndefined();
  });
});
