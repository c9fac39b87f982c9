/**
 * The owner's end of the channels other instances open to it (forward-channel.ts is the other end;
 * spec/notes/cluster.md, "The channel"): an HTTP `CONNECT` to `CHANNEL_PATH` on the gateway's own
 * port, checked as a forward on the internal path is (a fresh signature of this cluster, for this
 * instance and this boot, its nonce spent once: 403 otherwise, 421 naming the boot when signed for
 * another), answered 200 with a salt, then frames both ways under the connection's key. Each call
 * frame is served as a forwarded POST as its sender's caller (http/channel-call.ts), and its answer
 * sent back whole (JSON) or as it comes (SSE); a cancel frame, or the connection closing, ends the
 * call's answer as a client that leaves does. Any other `CONNECT` is refused: Node closes such a
 * connection when nothing listens for it.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { CHANNEL_PATH, CHANNEL_PROTOCOL, FrameReader, FrameWriter, SALT_HEADER, channelKey, newSalt } from '../cluster/channel-frames.js';
import { NONCE } from '../cluster/forward-signing.js';
import { RETURNED } from '../cluster/forwarder.js';
import type { Caller } from '../fronts/dialect.js';
import type { ForwardHead, Forwarding } from '../http/app-options.js';
import type { ChannelCall } from '../http/channel-call.js';
import { jsonAnswerOf } from '../http/exchange.js';
import { MAX_BODY_BYTES } from '../http/request-body.js';
import type { Logger } from '../log.js';
import { background } from '../util/background.js';
import { Lifeline } from '../util/lifeline.js';

/** What a call frame holds (written by forward-channel.ts). */
interface CallFrame {
  readonly k: 'call';
  readonly i: number;
  readonly p: string;
  readonly u: string;
  readonly sc: string[] | null;
  readonly h: Record<string, string>;
  readonly b: string;
}

export interface ChannelServerDeps {
  readonly secret: string;
  /** The internal path's checks (the head, then the whole of it: its nonce spent), uncounted. */
  readonly forwarding: Pick<Forwarding, 'precheck' | 'verify' | 'answerHeader'>;
  /** Serves one call (http/channel-call.ts, with the gateway's options). */
  readonly serve: (call: ChannelCall) => Promise<Response>;
  readonly logger: Logger;
  /** Counts each call received on a channel (`accepted`), and each CONNECT refused for its signature (forbidden, replayed, misdirected). */
  readonly counted?: ((outcome: string) => void) | undefined;
}

export interface ChannelServer {
  /** The server's `connect` listener. */
  connect(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes every channel: their calls' answers end as when a client leaves. */
  close(): void;
}

export function createChannelServer(deps: ChannelServerDeps): ChannelServer {
  const open = new Set<Duplex>();
  let closed = false;
  return {
    connect(req, socket, head) {
      socket.on('error', () => undefined); // 'close' follows
      background(
        'open a channel from another instance',
        accept(deps, req, socket).then((key) => {
          if (key === undefined) return;
          if (closed) return void socket.destroy();
          open.add(socket);
          socket.once('close', () => open.delete(socket));
          serveChannel(deps, socket, key, head);
        }),
        deps.logger,
      );
    },
    close() {
      closed = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
  };
}

/** Checks a CONNECT and answers it: the channel's key once it is open, undefined when refused. */
async function accept(deps: ChannelServerDeps, req: IncomingMessage, socket: Duplex): Promise<Buffer | undefined> {
  const [bootName, boot] = deps.forwarding.answerHeader;
  const refuse = (status: string, why?: string): undefined => {
    if (why !== undefined) deps.counted?.(why);
    socket.end(`HTTP/1.1 ${status}\r\n${bootName}: ${boot}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
    return undefined;
  };
  if (req.url !== CHANNEL_PATH || req.headers['x-mcpgw-protocol'] !== CHANNEL_PROTOCOL) return refuse('400 Bad Request');
  const head: ForwardHead = { method: 'GET', headers: { get: (name) => single(req.headers[name]) } };
  const pre = deps.forwarding.precheck(head);
  const verdict = pre.ok ? await deps.forwarding.verify(head, '') : pre;
  if (!verdict.ok) {
    return refuse(verdict.error === 'misdirected' ? '421 Misdirected Request' : '403 Forbidden', verdict.error);
  }
  if (verdict.value.path !== CHANNEL_PATH) return refuse('403 Forbidden', 'forbidden');
  const salt = newSalt();
  socket.write(`HTTP/1.1 200 OK\r\n${bootName}: ${boot}\r\n${SALT_HEADER}: ${salt}\r\n\r\n`);
  return channelKey(deps.secret, head.headers.get(NONCE) ?? '', salt);
}

function single(v: string | string[] | undefined): string | null {
  return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
}

/** Serves the frames of one open channel until it closes. */
function serveChannel(deps: ChannelServerDeps, socket: Duplex, key: Buffer, head: Buffer): void {
  const writer = new FrameWriter(key, 'owner');
  const reader = new FrameReader(key, 'forwarder', MAX_BODY_BYTES + 64 * 1024);
  /** Each call's lifeline, by number, until its answer is written whole. */
  const calls = new Map<number, Lifeline>();
  const send = (message: unknown): void => {
    if (!socket.destroyed) socket.write(writer.frame(message));
  };
  const read = (chunk: Buffer): void => {
    let frames: unknown[];
    try {
      frames = reader.push(chunk);
    } catch (e) {
      deps.logger.warn({ err: (e as Error).message }, 'a channel from another instance sent what this cluster does not sign: closed');
      socket.destroy();
      return;
    }
    for (const frame of frames as { k?: unknown; i?: unknown }[]) {
      if (typeof frame.i !== 'number') continue;
      if (frame.k === 'cancel') calls.get(frame.i)?.abort(new Error('the instance that forwarded the call cancelled it (its client left)'));
      else if (frame.k === 'call' && !calls.has(frame.i)) {
        const life = new Lifeline();
        calls.set(frame.i, life);
        deps.counted?.('accepted');
        background(
          'answer a call forwarded on a channel',
          answer(deps, frame as CallFrame, life, send).finally(() => calls.delete(frame.i as number)),
          deps.logger,
        );
      }
    }
  };
  socket.on('data', read);
  socket.once('close', () => {
    for (const life of calls.values()) life.abort(new Error('the channel from the instance that forwarded the call closed'));
    calls.clear();
  });
  if (head.length > 0) read(head);
}

/** The headers of an answer that travel back (as on the internal path). */
function returned(header: (name: string) => string | undefined): Record<string, string> {
  const h: Record<string, string> = {};
  for (const name of RETURNED) {
    const v = header(name);
    if (v !== undefined) h[name] = v;
  }
  return h;
}

/** Serves one call frame and sends its answer: whole when JSON, else its head, its pieces and its end. */
async function answer(deps: ChannelServerDeps, frame: CallFrame, life: Lifeline, send: (message: unknown) => void): Promise<void> {
  const caller: Caller = { principal: frame.u, tokenScopes: Array.isArray(frame.sc) ? new Set(frame.sc) : undefined };
  const headers = frame.h;
  const call: ChannelCall = {
    path: frame.p,
    caller,
    headers: { get: (name) => headers[name] ?? null },
    body: frame.b,
    life: { life, dispose: () => undefined },
  };
  const res = await deps.serve(call);
  const made = jsonAnswerOf(res);
  if (made) {
    send({ k: 'json', i: frame.i, s: made.status, h: returned((name) => made.headers[name]), b: made.text });
    return;
  }
  const h = returned((name) => res.headers.get(name) ?? undefined);
  if (!res.body || (h['content-type'] ?? '').includes('application/json')) {
    send({ k: 'json', i: frame.i, s: res.status, h, b: res.body ? await res.text() : '' });
    return;
  }
  send({ k: 'head', i: frame.i, s: res.status, h });
  const reader = res.body.getReader();
  const stop = (): void => void reader.cancel().catch(() => undefined);
  life.addEventListener('abort', stop);
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      send({ k: 'data', i: frame.i, d: decoder.decode(value, { stream: true }) });
    }
    send({ k: 'end', i: frame.i });
  } catch {
    send({ k: 'cut', i: frame.i });
  } finally {
    life.removeEventListener('abort', stop);
  }
}
