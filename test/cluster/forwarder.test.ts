import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createForwarder, type ForwardRefusal, type ForwardTransport, type ForwardedFor } from '../../src/cluster/forwarder.js';

type Forwarder = ReturnType<typeof createForwarder>;

/**
 * A forwarded request as `send` builds it, captured instead of sent. With `boot`, the owner's boot id:
 * a forward signed for another (or none) is answered 421 naming it, as an owner answers, and only the
 * forward sent again is captured. `answer` is what the owner answers then.
 */
async function captured(
  send: (fwd: Forwarder) => Promise<Response | undefined>,
  opts: { now?: number; secret?: string; boot?: string; answer?: () => Response } = {},
): Promise<{ req: Request; res: Response | undefined }> {
  let req: Request | undefined;
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (url: URL, init: RequestInit) => {
    const sent = new Request(url, init);
    if (opts.boot !== undefined && sent.headers.get('x-mcpgw-boot') !== opts.boot) {
      return new Response('{}', { status: 421, headers: { 'content-type': 'application/json', 'x-mcpgw-boot': opts.boot } });
    }
    req = sent;
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

/** A POST as `send` forwards it to instance "other", signed for `boot`. */
async function signed(now: number, boot: string, secret = 'secret-one', body = '{"a":1}'): Promise<Request> {
  const post = new Request('http://gw/mcp', { method: 'POST', headers: { authorization: 'Bearer k', 'mcp-name': 'x' }, body });
  return (await captured((fwd) => fwd.send('other', '/mcp', post, body), { now, secret, boot })).req;
}

/**
 * A receiving instance at `now` (its own memory and boot id; told its id with `instanceId`): what it
 * serves a forward for, or why it refuses it.
 */
function verifierAt(now: number, opts: { secret?: string; instanceId?: string } = {}) {
  const fwd = createForwarder({ secret: opts.secret ?? 'secret-one', urlOf: async () => undefined, now: () => now, instanceId: opts.instanceId });
  return {
    boot: fwd.answerHeader[1],
    async verify(req: Request, body: string): Promise<ForwardedFor | undefined> {
      const r = await fwd.verify(req, body);
      return r.ok ? r.value : undefined;
    },
    async refusal(req: Request, body: string): Promise<ForwardRefusal | undefined> {
      const r = await fwd.verify(req, body);
      return r.ok ? undefined : r.error;
    },
    /** Its check of the head alone (before the body is read): the body's length, or why not. */
    precheck(req: Request): number | ForwardRefusal {
      const r = fwd.precheck(req);
      return r.ok ? r.value.bytes : r.error;
    },
  };
}

/** A request like `req` with another method, target or header, its signature kept (a replay attempt). */
function altered(req: Request, change: { method?: string; target?: string; headers?: Record<string, string> }): Request {
  const headers = new Headers(req.headers);
  if (change.target) headers.set('x-mcpgw-path', change.target);
  for (const [k, v] of Object.entries(change.headers ?? {})) headers.set(k, v);
  return new Request(req.url, { method: change.method ?? req.method, headers });
}

describe('forwarder signatures', () => {
  it('accepts its own fresh signature, naming the public path, and passes the caller headers along', async () => {
    const owner = verifierAt(1_000_500);
    const req = await signed(1_000_000, owner.boot);
    expect(new URL(req.url).pathname).toBe('/_cluster/forward');
    expect(req.headers.get('authorization')).toBe('Bearer k');
    const target = await owner.verify(req, '{"a":1}');
    expect(target?.path).toBe('/mcp');
    expect([...target!.query]).toEqual([]);
  });

  it('refuses another secret, another body, an old signature, and no signature', async () => {
    const owner = verifierAt(1_000_000);
    const req = await signed(1_000_000, owner.boot);
    expect(await verifierAt(1_000_000, { secret: 'secret-two' }).refusal(req, '{"a":1}')).toBe('forbidden');
    expect(await owner.refusal(req, '{"a":2}')).toBe('forbidden');
    expect(await verifierAt(1_000_000 + 31_000).refusal(req, '{"a":1}')).toBe('forbidden');
    expect(await owner.refusal(new Request('http://x', { method: 'POST' }), '')).toBe('forbidden');
  });

  it('checks the signed head before the body is read: its length, for this instance and boot, fresh, not replayed', async () => {
    const owner = verifierAt(1_000_100, { instanceId: 'other' });
    const req = await signed(1_000_000, owner.boot, 'secret-one', '{"a":"é"}');
    expect(owner.precheck(req)).toBe(Buffer.byteLength('{"a":"é"}'));
    expect(owner.precheck(altered(req, { headers: { 'x-mcpgw-bytes': '999999' } }))).toBe('forbidden');
    expect(owner.precheck(altered(req, { target: '/other' }))).toBe('forbidden');
    expect(owner.precheck(altered(req, { headers: { authorization: 'Bearer other' } }))).toBe('forbidden');
    const headless = new Headers(req.headers);
    headless.delete('x-mcpgw-head');
    expect(owner.precheck(new Request(req.url, { method: 'POST', headers: headless }))).toBe('forbidden');
    expect(owner.precheck(new Request('http://x', { method: 'POST' }))).toBe('forbidden');
    expect(verifierAt(1_000_100, { secret: 'secret-two', instanceId: 'other' }).precheck(req)).toBe('forbidden');
    expect(verifierAt(1_000_000 + 31_000, { instanceId: 'other' }).precheck(req)).toBe('forbidden');
    expect(verifierAt(1_000_100, { instanceId: 'third' }).precheck(req)).toBe('forbidden');
    expect(verifierAt(1_000_100, { instanceId: 'other' }).precheck(req)).toBe('misdirected'); // another boot
    expect(await owner.verify(req, '{"a":"é"}')).toBeDefined();
    expect(owner.precheck(req)).toBe('replayed');
  });

  it('serves a signed request once: the same request replayed within its 30 s is refused as a replay', async () => {
    const owner = verifierAt(1_000_100);
    const req = await signed(1_000_000, owner.boot);
    expect(await owner.verify(req, '{"a":1}')).toBeDefined();
    expect(await owner.refusal(req, '{"a":1}')).toBe('replayed');
    // Another nonce breaks the signature (the nonce is signed), so a replay cannot make itself fresh.
    expect(await owner.refusal(altered(req, { headers: { 'x-mcpgw-nonce': 'another-nonce' } }), '{"a":1}')).toBe('forbidden');
    // A request without a nonce is not one of ours.
    const headers = new Headers(req.headers);
    headers.delete('x-mcpgw-nonce');
    expect(await owner.refusal(new Request(req.url, { method: 'POST', headers }), '{"a":1}')).toBe('forbidden');
  });

  it('serves only what is signed for its own boot id: none or another is misdirected, and spends no nonce', async () => {
    const owner = verifierAt(1_000_000);
    // A sender that has heard no boot id yet signs for none.
    const first = new Request('http://gw/mcp', { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{"a":1}' });
    const { req: bootless } = await captured((fwd) => fwd.send('other', '/mcp', first, '{"a":1}'));
    expect(bootless.headers.get('x-mcpgw-boot')).toBeNull();
    expect(await owner.refusal(bootless, '{"a":1}')).toBe('misdirected');
    const other = await signed(1_000_000, verifierAt(1_000_000).boot);
    expect(await owner.refusal(other, '{"a":1}')).toBe('misdirected');
    expect(await owner.refusal(other, '{"a":1}')).toBe('misdirected'); // not spent: never 'replayed'
    // The boot id is signed: a forward cannot be given this one.
    expect(await owner.refusal(altered(other, { headers: { 'x-mcpgw-boot': owner.boot } }), '{"a":1}')).toBe('forbidden');
  });

  it('is good at the instance it was signed for only (signed() sends to "other")', async () => {
    const other = verifierAt(1_000_000, { instanceId: 'other' });
    const req = await signed(1_000_000, other.boot);
    expect(await verifierAt(1_000_000, { instanceId: 'me' }).refusal(req.clone(), '{"a":1}')).toBe('forbidden');
    expect(await other.verify(req.clone(), '{"a":1}')).toBeDefined();
    // The instance named cannot be changed: it is signed.
    expect(await verifierAt(1_000_000, { instanceId: 'me' }).refusal(altered(req, { headers: { 'x-mcpgw-for': 'me' } }), '{"a":1}')).toBe('forbidden');
  });

  it("serves here what the owner's internal path refused (another secret or version): it tells why and resolves undefined", async () => {
    const heard: string[] = [];
    const post = Object.assign(new Request('http://gw/mcp', { method: 'POST', body: '{}' }), { onRefused: (why: string) => void heard.push(why) });
    const refusedAnswer = () => new Response('{}', { status: 403, headers: { 'content-type': 'application/json', 'x-mcpgw-refused': 'forbidden' } });
    const { res } = await captured((fwd) => fwd.send('other', '/mcp', post, '{}'), { answer: refusedAnswer });
    expect(res).toBeUndefined();
    expect(heard).toEqual(['forbidden']);
    // A 403 of the public path (its gate) is the client's answer, passed on.
    const gate = () => new Response('{}', { status: 403, headers: { 'content-type': 'application/json' } });
    expect((await captured((fwd) => fwd.send('other', '/mcp', post, '{}'), { answer: gate })).res?.status).toBe(403);
  });

  it('tells its client forward_cut when the owner refuses the forward as a replay (a copy of it went out before: it may have run), never serving it here', async () => {
    const heard: string[] = [];
    const body = '{"jsonrpc":"2.0","id":42,"method":"tools/call"}';
    const post = Object.assign(new Request('http://gw/mcp', { method: 'POST', body }), { onRefused: (why: string) => void heard.push(why) });
    const replayed = () => new Response('{}', { status: 403, headers: { 'content-type': 'application/json', 'x-mcpgw-replayed': '1' } });
    const { res } = await captured((fwd) => fwd.send('other', '/mcp', post, body), { answer: replayed });
    expect(await res?.json()).toMatchObject({ jsonrpc: '2.0', id: 42, error: { code: -32603, data: { reason: 'forward_cut' } } });
    expect(heard).toEqual([]);
  });

  it('does not forward to an instance it has no URL for', async () => {
    const fwd = createForwarder({ secret: 's', urlOf: async () => undefined });
    expect(await fwd.send('gone', '/mcp', new Request('http://gw/mcp', { method: 'POST', body: '{}' }), '{}')).toBeUndefined();
  });

  it('rejects a forward aborted on its way (the client left), where an owner it cannot reach gives undefined', async () => {
    const client = new AbortController();
    const transport: ForwardTransport = (_url, { signal }) =>
      new Promise((_resolve, reject) => {
        if (signal.aborted) reject(signal.reason as Error);
        else signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      });
    const fwd = createForwarder({ secret: 's', urlOf: async () => 'http://127.0.0.1:1', transport });
    const sending = fwd.send('a', '/mcp', new Request('http://gw/mcp', { method: 'POST', body: '{}', signal: client.signal }), '{}');
    client.abort(new Error('the client left'));
    await expect(sending).rejects.toThrow('the client left');
    const refused: ForwardTransport = async () => Promise.reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }));
    const unreachable = createForwarder({ secret: 's', urlOf: async () => 'http://127.0.0.1:1', transport: refused });
    expect(await unreachable.send('a', '/mcp', new Request('http://gw/mcp', { method: 'POST', body: '{}' }), '{}')).toBeUndefined();
  });
});

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

const post = () => new Request('http://gw/mcp', { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{}' });
const bootOf = (req: Request): string | null => req.headers.get('x-mcpgw-boot');

describe("forwards signed for the owner's boot", () => {
  it('sends the first forward to an owner again, signed for the boot id its 421 names, and the next ones signed for it at once; a replay is refused by that memory and by a restarted owner', async () => {
    const owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' });
    const { sender, sent } = wired(() => owner);
    expect((await sender.send('a', '/mcp', post(), '{}'))?.status).toBe(200);
    expect(sent.map(bootOf)).toEqual([null, owner.answerHeader[1]]); // nothing heard yet: 421, then signed for its boot
    expect((await sender.send('a', '/mcp', post(), '{}'))?.status).toBe(200);
    expect(sent.map(bootOf)).toEqual([null, owner.answerHeader[1], owner.answerHeader[1]]);
    expect(await owner.verify(sent[2]!.clone(), '{}')).toEqual({ ok: false, error: 'replayed' });
    // The same instance after a restart: its memory is new, and so is its boot id.
    const restarted = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' });
    expect(restarted.answerHeader[1]).not.toBe(owner.answerHeader[1]);
    expect(await restarted.verify(sent[2]!.clone(), '{}')).toEqual({ ok: false, error: 'misdirected' });
  });

  it('sends a forward again, once, signed for the boot id a 421 names, when the owner restarted; a second 421 is never passed on', async () => {
    let owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' });
    const { sender, sent } = wired(() => owner);
    await sender.send('a', '/mcp', post(), '{}');
    sent.length = 0;
    owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' }); // restarted
    const res = await sender.send('a', '/mcp', post(), '{}');
    expect(res?.status).toBe(200);
    expect(await res?.json()).toEqual({ served: '/mcp' });
    expect(sent.map(bootOf)).toEqual([expect.any(String), owner.answerHeader[1]]);
    // An owner whose boot id changes at every answer: after the second 421 the request is served where it arrived, and the caller is told.
    const restless = wired(() => createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' }));
    const told: unknown[] = [];
    const source = Object.assign(post(), { onMisdirected: (boots: unknown) => void told.push(boots) });
    expect(await restless.sender.send('a', '/mcp', source, '{}')).toBeUndefined();
    expect(restless.sent).toHaveLength(2);
    expect(told).toEqual([{ signed: bootOf(restless.sent[1]!), heard: expect.any(String) }]);
  });

  it('never signs a second copy for the boot id a forward was signed for: a 421 naming it is given up on', async () => {
    const owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' });
    // Something on the way answers 421 naming the owner's boot id, also to a forward signed for it.
    const sent: Request[] = [];
    const liar = createForwarder({
      secret: 's',
      urlOf: async () => 'http://127.0.0.1:1',
      transport: async (url, { method, headers, body }) => {
        sent.push(new Request(url, { method, headers, body: body ?? null }));
        return { status: 421, headers: new Headers({ 'x-mcpgw-boot': owner.answerHeader[1] }), body: '{}' };
      },
    });
    await liar.send('a', '/mcp', post(), '{}'); // the first 421 teaches it the boot id
    const told: unknown[] = [];
    const source = Object.assign(post(), { onMisdirected: (boots: unknown) => void told.push(boots) });
    expect(await liar.send('a', '/mcp', source, '{}')).toBeUndefined();
    expect(sent.map(bootOf)).toEqual([null, owner.answerHeader[1], owner.answerHeader[1]]);
    expect(told).toEqual([{ signed: owner.answerHeader[1], heard: owner.answerHeader[1] }]);
  });

  it('forgets what it heard of an instance that is gone: the next forward learns its boot id again', async () => {
    const owner = createForwarder({ secret: 's', urlOf: async () => undefined, instanceId: 'a' });
    const { sender, sent } = wired(() => owner);
    await sender.send('a', '/mcp', post(), '{}');
    sender.forget('a');
    sent.length = 0;
    expect((await sender.send('a', '/mcp', post(), '{}'))?.status).toBe(200);
    expect(sent.map(bootOf)).toEqual([null, owner.answerHeader[1]]);
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
      const owner = verifierAt(1_000_000);
      const { req } = await captured((fwd) => fwd.send('a', '/mcp', incoming, 'ignored for GET and DELETE'), { boot: owner.boot });
      expect(req.method).toBe(method);
      expect(await req.text()).toBe('');
      expect(req.headers.get('mcp-session-id')).toBe(sid);
      expect(req.headers.get('last-event-id')).toBe('ev-7');
      expect(req.headers.get('mcp-protocol-version')).toBe('2025-11-25');
      expect((await owner.verify(req, ''))?.path).toBe('/mcp');
    }
  });

  it('carries the query of the 2024 messages path, signed', async () => {
    const target = `/messages?sessionId=${encodeURIComponent(sid)}`;
    const incoming = new Request(`http://gw${target}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0"}' });
    const owner = verifierAt(1_000_000);
    const { req } = await captured((fwd) => fwd.send('a', target, incoming, '{"jsonrpc":"2.0"}'), { boot: owner.boot });
    const verified = await owner.verify(req, '{"jsonrpc":"2.0"}');
    expect(verified?.path).toBe('/messages');
    expect(verified?.query.get('sessionId')).toBe(sid);
    // Another session's id in the target breaks the signature.
    expect(await owner.refusal(altered(req, { target: '/messages?sessionId=b~other' }), '{"jsonrpc":"2.0"}')).toBe('forbidden');
  });

  it("refuses a signed request replayed with another caller's key or for another session", async () => {
    const owner = verifierAt(1_000_000);
    const req = await signed(1_000_000, owner.boot);
    expect(await owner.refusal(altered(req, { headers: { authorization: 'Bearer other' } }), '{"a":1}')).toBe('forbidden');
    expect(await owner.refusal(altered(req, { headers: { 'mcp-session-id': 'a~x' } }), '{"a":1}')).toBe('forbidden');
    expect(await owner.verify(req, '{"a":1}')).toBeDefined();
  });

  it('carries the traceparent the owner joins, signed: another one breaks the signature', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const post = new Request('http://gw/mcp', { method: 'POST', headers: { traceparent }, body: '{}' });
    const owner = verifierAt(1_000_000);
    const { req } = await captured((fwd) => fwd.send('other', '/mcp', post, '{}'), { boot: owner.boot });
    expect(req.headers.get('traceparent')).toBe(traceparent);
    const forged = altered(req, { headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01' } });
    expect(await owner.refusal(forged, '{}')).toBe('forbidden');
    expect(await owner.verify(req, '{}')).toBeDefined();
  });

  it('refuses a signed request replayed with another method', async () => {
    const incoming = new Request('http://gw/mcp', { method: 'GET', headers: { 'mcp-session-id': sid } });
    const owner = verifierAt(1_000_000);
    const { req } = await captured((fwd) => fwd.send('a', '/mcp', incoming), { boot: owner.boot });
    expect(await owner.refusal(altered(req, { method: 'DELETE' }), '')).toBe('forbidden');
    expect(await owner.refusal(altered(req, { method: 'PUT' }), '')).toBe('forbidden');
    expect(await owner.verify(req, '')).toBeDefined();
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
