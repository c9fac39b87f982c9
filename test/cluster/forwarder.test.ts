import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createForwarder, type ForwardTransport, type ForwardedFor } from '../../src/cluster/forwarder.js';
import { GatewayError, httpStatusOfReason } from '../../src/errors.js';

/** A forwarded request as `send` builds it, captured instead of sent; `answer` is what the owner answers. */
async function captured(
  send: (fwd: ReturnType<typeof createForwarder>) => Promise<Response | undefined>,
  opts: { now?: number; secret?: string; answer?: () => Response } = {},
): Promise<{ req: Request; res: Response | undefined }> {
  let req: Request | undefined;
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (url: URL, init: RequestInit) => {
    req = new Request(url, init);
    return opts.answer?.() ?? new Response('{}', { headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  try {
    const fwd = createForwarder({ secret: opts.secret ?? 'secret-one', urlOf: async () => 'http://127.0.0.1:1', now: () => opts.now ?? 1_000_000 });
    const res = await send(fwd);
    return { req: req!, res };
  } finally {
    globalThis.fetch = realFetch;
  }
}

/** A POST as `send` forwards it. */
async function signed(now: number, secret = 'secret-one', body = '{"a":1}'): Promise<Request> {
  const post = new Request('http://gw/mcp', { method: 'POST', headers: { authorization: 'Bearer k', 'mcp-name': 'x' }, body });
  return (await captured((fwd) => fwd.send('other', '/mcp', post, body), { now, secret })).req;
}

/** A fresh verifier (its own nonces) at `now`: what it accepts, or undefined when it refuses. */
const verifierAt = (now: number, secret = 'secret-one') => {
  const fwd = createForwarder({ secret, urlOf: async () => undefined, now: () => now });
  return {
    async verify(req: Request, body: string): Promise<ForwardedFor | undefined> {
      const r = await fwd.verify(req, body);
      return r.ok ? r.value : undefined;
    },
  };
};

/** A request like `req` with another method, target or header, its signature kept (a replay attempt). */
function altered(req: Request, change: { method?: string; target?: string; headers?: Record<string, string> }): Request {
  const headers = new Headers(req.headers);
  if (change.target) headers.set('x-mcpgw-path', change.target);
  for (const [k, v] of Object.entries(change.headers ?? {})) headers.set(k, v);
  return new Request(req.url, { method: change.method ?? req.method, headers });
}

describe('forwarder signatures', () => {
  it('accepts its own fresh signature, naming the public path, and passes the caller headers along', async () => {
    const req = await signed(1_000_000);
    expect(new URL(req.url).pathname).toBe('/_cluster/forward');
    expect(req.headers.get('authorization')).toBe('Bearer k');
    const target = await verifierAt(1_000_500).verify(req, '{"a":1}');
    expect(target?.path).toBe('/mcp');
    expect([...target!.query]).toEqual([]);
  });

  it('refuses another secret, another body, an old signature, and no signature', async () => {
    const req = await signed(1_000_000);
    expect(await verifierAt(1_000_000, 'secret-two').verify(req, '{"a":1}')).toBeUndefined();
    expect(await verifierAt(1_000_000).verify(req, '{"a":2}')).toBeUndefined();
    expect(await verifierAt(1_000_000 + 31_000).verify(req, '{"a":1}')).toBeUndefined();
    expect(await verifierAt(1_000_000).verify(new Request('http://x', { method: 'POST' }), '')).toBeUndefined();
  });

  it('serves a signed request once: the same request replayed within its 30 s is refused as a replay', async () => {
    const req = await signed(1_000_000);
    const verifier = createForwarder({ secret: 'secret-one', urlOf: async () => undefined, now: () => 1_000_100 });
    expect((await verifier.verify(req, '{"a":1}')).ok).toBe(true);
    expect(await verifier.verify(req, '{"a":1}')).toEqual({ ok: false, error: 'replayed' });
    // Another nonce breaks the signature (the nonce is signed), so a replay cannot make itself fresh.
    const renonced = altered(req, { headers: { 'x-mcpgw-nonce': 'another-nonce' } });
    expect(await verifier.verify(renonced, '{"a":1}')).toEqual({ ok: false, error: 'forbidden' });
    // A request without a nonce is not one of ours.
    const headers = new Headers(req.headers);
    headers.delete('x-mcpgw-nonce');
    expect(await verifier.verify(new Request(req.url, { method: 'POST', headers }), '{"a":1}')).toEqual({ ok: false, error: 'forbidden' });
  });

  it('refuses with cluster_unavailable, never accepts, when the nonce store cannot be asked', async () => {
    const req = await signed(1_000_000);
    const verifier = createForwarder({
      secret: 'secret-one',
      urlOf: async () => undefined,
      now: () => 1_000_000,
      nonces: { accept: async () => Promise.reject(new Error('The client is offline')) },
    });
    const thrown = await verifier.verify(req, '{"a":1}').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(GatewayError);
    expect((thrown as GatewayError).code).toBe('cluster_unavailable');
    expect(httpStatusOfReason('cluster_unavailable')).toBe(200); // a JSON-RPC error the client reads, data.reason included
    // A forgery is refused without asking the store at all.
    expect(await verifier.verify(req, '{"a":2}')).toEqual({ ok: false, error: 'forbidden' });
  });

  it('is good at the instance it was signed for only (signed() sends to "other")', async () => {
    const req = await signed(1_000_000);
    const at = (instanceId: string) => createForwarder({ secret: 'secret-one', urlOf: async () => undefined, now: () => 1_000_000, instanceId });
    expect(await at('me').verify(req.clone(), '{"a":1}')).toEqual({ ok: false, error: 'forbidden' });
    expect((await at('other').verify(req.clone(), '{"a":1}')).ok).toBe(true);
    // The instance named cannot be changed: it is signed.
    expect(await at('me').verify(altered(req, { headers: { 'x-mcpgw-for': 'me' } }), '{"a":1}')).toEqual({ ok: false, error: 'forbidden' });
  });

  it('while the store cannot be asked, an instance that knows its id still serves a forward once and refuses its replay', async () => {
    const req = await signed(1_000_000);
    let asked = 0;
    const verifier = createForwarder({
      secret: 'secret-one',
      urlOf: async () => undefined,
      now: () => 1_000_000,
      instanceId: 'other',
      nonces: { accept: async () => (asked++, Promise.reject(new Error('The client is offline'))) },
    });
    expect((await verifier.verify(req.clone(), '{"a":1}')).ok).toBe(true);
    expect(await verifier.verify(req.clone(), '{"a":1}')).toEqual({ ok: false, error: 'replayed' });
    expect(asked).toBe(1); // the replay is refused by this instance's own memory first
  });

  it('does not forward to an instance it has no URL for', async () => {
    const fwd = createForwarder({ secret: 's', urlOf: async () => undefined });
    expect(await fwd.send('gone', '/mcp', new Request('http://gw/mcp', { method: 'POST', body: '{}' }), '{}')).toBeUndefined();
  });
});

type Forwarder = ReturnType<typeof createForwarder>;

/**
 * A sender whose forwards reach the forwarder `owner()` returns (the receiving instance; another one
 * after a restart), answered as the HTTP layer answers them (http/forwarded.ts): 200 when served, 421
 * when misdirected, 403 otherwise, every answer with the owner's `answerHeader`. `sent` keeps a copy
 * of each forward.
 */
function wired(owner: () => Forwarder): { sender: Forwarder; sent: Request[] } {
  const sent: Request[] = [];
  const transport: ForwardTransport = async (url, { method, headers, body }) => {
    const req = new Request(url, { method, headers, body: body ?? null });
    sent.push(req.clone());
    const at = owner();
    const verdict = await at.verify(req, body ?? '');
    const status = verdict.ok ? 200 : verdict.error === 'misdirected' ? 421 : 403;
    const answer = new Headers({ 'content-type': 'application/json', [at.answerHeader[0]]: at.answerHeader[1] });
    return { status, headers: answer, body: JSON.stringify(verdict.ok ? { served: verdict.value.path } : { refused: verdict.error }) };
  };
  return { sender: createForwarder({ secret: 's', urlOf: async () => 'http://127.0.0.1:1', transport }), sent };
}

/** A nonce store that accepts every nonce and counts how often it is asked. */
const countingStore = () => ({
  asked: 0,
  accept: async function (this: { asked: number }) {
    this.asked++;
    return true;
  },
});

const post = () => new Request('http://gw/mcp', { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{}' });

describe("forwards signed for the owner's boot", () => {
  it('learns the boot id from the first answer and signs it into the next forward, which is served with no store asked; its replay is refused by that memory and by a restarted owner', async () => {
    const store = countingStore();
    const owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a', nonces: store });
    const { sender, sent } = wired(() => owner);
    expect((await sender.send('a', '/mcp', post(), '{}'))?.status).toBe(200);
    expect(sent[0]!.headers.get('x-mcpgw-boot')).toBeNull(); // nothing heard yet: the first spends its nonce in the store
    expect(store.asked).toBe(1);
    expect((await sender.send('a', '/mcp', post(), '{}'))?.status).toBe(200);
    expect(sent[1]!.headers.get('x-mcpgw-boot')).toBe(owner.answerHeader[1]);
    expect(store.asked).toBe(1); // bound to this memory: it alone decides
    expect(await owner.verify(sent[1]!.clone(), '{}')).toEqual({ ok: false, error: 'replayed' });
    // The same instance after a restart: its memory is new, and so is its boot id.
    const restarted = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a', nonces: countingStore() });
    expect(restarted.answerHeader[1]).not.toBe(owner.answerHeader[1]);
    expect(await restarted.verify(sent[1]!.clone(), '{}')).toEqual({ ok: false, error: 'misdirected' });
    // The boot id is signed: a replay cannot take the new one.
    const rebooted = new Request(sent[1]!.url, { method: 'POST', headers: new Headers(sent[1]!.headers), body: '{}' });
    rebooted.headers.set('x-mcpgw-boot', restarted.answerHeader[1]);
    expect(await restarted.verify(rebooted, '{}')).toEqual({ ok: false, error: 'forbidden' });
  });

  it('sends a forward again, once, signed for the boot id a 421 names, when the owner restarted; never a third time', async () => {
    let owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' });
    const { sender, sent } = wired(() => owner);
    await sender.send('a', '/mcp', post(), '{}');
    owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' }); // restarted
    const res = await sender.send('a', '/mcp', post(), '{}');
    expect(res?.status).toBe(200);
    expect(await res?.json()).toEqual({ served: '/mcp' });
    expect(sent.slice(1).map((r) => r.headers.get('x-mcpgw-boot'))).toEqual([expect.any(String), owner.answerHeader[1]]);
    // An owner whose boot id changes at every answer: the second 421 is the answer.
    const restless = wired(() => createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' }));
    await restless.sender.send('a', '/mcp', post(), '{}');
    expect((await restless.sender.send('a', '/mcp', post(), '{}'))?.status).toBe(421);
    expect(restless.sent).toHaveLength(3);
  });

  it('forgets what it heard of an instance that is gone: the next forward spends its nonce in the store again', async () => {
    const store = countingStore();
    const owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a', nonces: store });
    const { sender, sent } = wired(() => owner);
    await sender.send('a', '/mcp', post(), '{}');
    sender.forget('a');
    await sender.send('a', '/mcp', post(), '{}');
    expect(sent[1]!.headers.get('x-mcpgw-boot')).toBeNull();
    expect(store.asked).toBe(2);
  });
});

describe('forwarding a legacy session request', () => {
  const sid = 'a~5f0c7f3e-8d1e-4d6a-9a43-0c1d2e3f4a5b';

  it('forwards GET and DELETE with their method, no body, and the session and resumption headers; the signature covers the empty body', async () => {
    for (const method of ['GET', 'DELETE']) {
      const incoming = new Request('http://gw/mcp', {
        method,
        headers: {
          authorization: 'Bearer k',
          accept: 'text/event-stream',
          'mcp-session-id': sid,
          'last-event-id': 'ev-7',
          'mcp-protocol-version': '2025-11-25',
        },
      });
      const { req } = await captured((fwd) => fwd.send('a', '/mcp', incoming, 'ignored for GET and DELETE'));
      expect(req.method).toBe(method);
      expect(await req.text()).toBe('');
      expect(req.headers.get('mcp-session-id')).toBe(sid);
      expect(req.headers.get('last-event-id')).toBe('ev-7');
      expect(req.headers.get('mcp-protocol-version')).toBe('2025-11-25');
      expect((await verifierAt(1_000_000).verify(req, ''))?.path).toBe('/mcp');
    }
  });

  it('carries the query of the 2024 messages path, signed', async () => {
    const target = `/messages?sessionId=${encodeURIComponent(sid)}`;
    const incoming = new Request(`http://gw${target}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0"}' });
    const { req } = await captured((fwd) => fwd.send('a', target, incoming, '{"jsonrpc":"2.0"}'));
    const verified = await verifierAt(1_000_000).verify(req, '{"jsonrpc":"2.0"}');
    expect(verified?.path).toBe('/messages');
    expect(verified?.query.get('sessionId')).toBe(sid);
    // Another session's id in the target breaks the signature.
    expect(await verifierAt(1_000_000).verify(altered(req, { target: '/messages?sessionId=b~other' }), '{"jsonrpc":"2.0"}')).toBeUndefined();
  });

  it("refuses a signed request replayed with another caller's key or for another session", async () => {
    const req = await signed(1_000_000);
    expect(await verifierAt(1_000_000).verify(req, '{"a":1}')).toBeDefined();
    expect(await verifierAt(1_000_000).verify(altered(req, { headers: { authorization: 'Bearer other' } }), '{"a":1}')).toBeUndefined();
    expect(await verifierAt(1_000_000).verify(altered(req, { headers: { 'mcp-session-id': 'a~x' } }), '{"a":1}')).toBeUndefined();
  });

  it('carries the traceparent the owner joins, signed: another one breaks the signature', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const post = new Request('http://gw/mcp', { method: 'POST', headers: { traceparent }, body: '{}' });
    const { req } = await captured((fwd) => fwd.send('other', '/mcp', post, '{}'));
    expect(req.headers.get('traceparent')).toBe(traceparent);
    expect(await verifierAt(1_000_000).verify(req, '{}')).toBeDefined();
    const forged = altered(req, { headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01' } });
    expect(await verifierAt(1_000_000).verify(forged, '{}')).toBeUndefined();
  });

  it('refuses a signed request replayed with another method', async () => {
    const incoming = new Request('http://gw/mcp', { method: 'GET', headers: { 'mcp-session-id': sid } });
    const { req } = await captured((fwd) => fwd.send('a', '/mcp', incoming));
    expect(await verifierAt(1_000_000).verify(req, '')).toBeDefined();
    expect(await verifierAt(1_000_000).verify(altered(req, { method: 'DELETE' }), '')).toBeUndefined();
    expect(await verifierAt(1_000_000).verify(altered(req, { method: 'PUT' }), '')).toBeUndefined();
  });

  it("passes the owner's Mcp-Session-Id back", async () => {
    const incoming = new Request('http://gw/mcp', { method: 'POST', body: '{}' });
    const { res } = await captured((fwd) => fwd.send('a', '/mcp', incoming, '{}'), {
      answer: () => new Response('{}', { headers: { 'content-type': 'application/json', 'mcp-session-id': sid, 'x-internal': 'no' } }),
    });
    expect(res?.headers.get('mcp-session-id')).toBe(sid);
    expect(res?.headers.get('x-internal')).toBeNull();
  });

  it('streams an SSE answer through as it comes, and aborts the forwarded request when the incoming one is aborted', async () => {
    let upstream: IncomingMessage | undefined;
    let closed!: () => void;
    const upstreamClosed = new Promise<void>((resolve) => (closed = resolve));
    const server: Server = createServer((req, res) => {
      upstream = req;
      res.on('close', () => closed());
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': sid });
      res.write('id: 1\ndata: {"first":true}\n\n'); // and the stream stays open
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const fwd = createForwarder({ secret: 's', urlOf: async () => `http://127.0.0.1:${port}` });
      const client = new AbortController();
      const incoming = new Request('http://gw/mcp', { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid }, signal: client.signal });
      const res = await fwd.send('a', '/mcp', incoming);
      expect(res?.status).toBe(200);
      expect(res?.headers.get('content-type')).toBe('text/event-stream');
      expect(upstream?.method).toBe('GET');
      const reader = res!.body!.pipeThrough(new TextDecoderStream()).getReader();
      const first = await reader.read(); // before the owner ended its stream
      expect(first.value).toContain('"first":true');
      client.abort();
      let timer: ReturnType<typeof setTimeout> | undefined;
      // A generous deadline (a loaded machine): the upstream would otherwise stay open for good.
      const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 15_000)));
      expect(await Promise.race([upstreamClosed.then(() => 'closed' as const), deadline])).toBe('closed');
      clearTimeout(timer);
      await reader.cancel().catch(() => undefined);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
