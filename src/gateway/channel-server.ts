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
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  CHANNEL_PATH,
  CHANNEL_PROTOCOL,
  FrameReader,
  FrameWriter,
  MAX_ANSWER_FRAME,
  MAX_CALL_FRAME,
  MAX_PIECE,
  PING_MS,
  SALT_HEADER,
  STREAM_WINDOW,
  channelKey,
  newSalt,
  type Frame,
} from '../cluster/channel-frames.js';
import { NONCE } from '../cluster/forward-signing.js';
import { RETURNED } from '../cluster/forwarder.js';
import type { ForwardHead, Forwarding } from '../http/app-options.js';
import type { ChannelCall } from '../http/channel-call.js';
import { jsonAnswerOf } from '../http/exchange.js';
import type { Logger } from '../log.js';
import { sleep } from '../util/abort.js';
import { background } from '../util/background.js';
import { Lifeline } from '../util/lifeline.js';

/** How long a channel may be silent (its sender pings every PING_MS) before the owner closes it. */
const OWNER_SILENCE_MS = 3 * PING_MS + 5_000;

/** What a call frame's head says (written by forward-channel.ts; its body is the request's). */
interface CallHead {
  readonly k: 'call';
  readonly i: number;
  /** The public path, the caller's principal and token scopes, the client's headers that travel. */
  readonly p: unknown;
  readonly u: unknown;
  readonly sc: unknown[] | null;
  readonly h: Record<string, unknown> | null;
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
  /**
   * Closes every channel, once the answers of their calls went out (the gateway cancelled them: each
   * answers gateway_closing) or after CLOSE_GRACE_MS; what is still served then ends as when a client leaves.
   */
  close(): Promise<void>;
}

/** How long closing waits for the answers of the calls on its channels (cancelled by then: each is on its way). */
const CLOSE_GRACE_MS = 1_000;
/** How long a CONNECT may take to be checked and answered. */
const ACCEPT_MS = 5_000;

export function createChannelServer(deps: ChannelServerDeps): ChannelServer {
  /** The open channels, each with the calls it is serving. */
  const open = new Map<Duplex, Map<number, Serving>>();
  let closed = false;
  return {
    connect(req, socket, head) {
      socket.on('error', () => undefined); // 'close' follows
      const slow = setTimeout(() => socket.destroy(), ACCEPT_MS);
      slow.unref();
      background(
        'open a channel from another instance',
        accept(deps, req, socket).then((key) => {
          clearTimeout(slow);
          if (key === undefined) return;
          if (closed) {
            socket.destroy();
            return;
          }
          const calls = new Map<number, Serving>();
          open.set(socket, calls);
          socket.once('close', () => open.delete(socket));
          serveChannel(deps, socket, key, head, calls);
        }),
        deps.logger,
      );
    },
    async close() {
      closed = true;
      // The calls were cancelled with the gateway: their answers (gateway_closing) go out first.
      const until = Date.now() + CLOSE_GRACE_MS;
      while ([...open.values()].some((calls) => calls.size > 0) && Date.now() < until) await sleep(10);
      for (const socket of open.keys()) socket.destroy();
      open.clear();
    },
  };
}

/** Checks a CONNECT and answers it: the channel's key once it is open, undefined when refused. */
async function accept(deps: ChannelServerDeps, req: IncomingMessage, socket: Duplex): Promise<Buffer | undefined> {
  const [bootName, boot] = deps.forwarding.answerHeader;
  const refuse = (status: string, why?: string): undefined => {
    if (why !== undefined) deps.counted?.(why);
    // Written, then the socket goes: it is the server's no more (no timeout of its would end it).
    socket.end(`HTTP/1.1 ${status}\r\n${bootName}: ${boot}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`, () => socket.destroy());
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

/** One call being served on a channel: its lifeline, and the credit its streamed answer has left (forward-channel.ts gives more). */
interface Serving {
  readonly life: Lifeline;
  credit: number;
  /** Told when credit comes, or the call ends. */
  wake: (() => void) | undefined;
}

/** How the answers of one channel are written: frames in order; `drained` waits until the socket takes more. */
interface Writes {
  send(head: Record<string, unknown>, body?: Buffer | string): boolean;
  drained(): Promise<void>;
}

/** Serves the frames of one open channel until it closes. */
function serveChannel(deps: ChannelServerDeps, socket: Duplex, key: Buffer, rest: Buffer, calls: Map<number, Serving>): void {
  const writer = new FrameWriter(key, 'owner');
  const reader = new FrameReader(key, 'forwarder', MAX_CALL_FRAME);
  const writes: Writes = {
    send(head, body) {
      const frame = writer.bounded(head, body ?? '', MAX_ANSWER_FRAME);
      if (!frame) return false;
      if (!socket.destroyed) socket.write(frame);
      return true;
    },
    drained: () => (socket.destroyed || !socket.writableNeedDrain ? Promise.resolve() : new Promise((r) => socket.once('drain', r).once('close', r))),
  };
  const read = (chunk: Buffer): void => {
    let frames: Frame[];
    try {
      frames = reader.push(chunk);
    } catch (e) {
      deps.logger.warn({ err: (e as Error).message }, 'a channel from another instance sent what this cluster does not take: closed');
      socket.destroy();
      return;
    }
    for (const frame of frames) take(deps, frame, calls, writes);
  };
  socket.on('data', read);
  // Its sender's end closed: this one is done too (a half-open socket would hold its calls).
  socket.on('end', () => socket.destroy());
  // Its sender pings every PING_MS: a channel silent much longer than that lost its sender.
  (socket as Partial<Pick<Socket, 'setTimeout'>>).setTimeout?.(OWNER_SILENCE_MS, () => {
    deps.logger.warn({}, `a channel from another instance was silent for ${OWNER_SILENCE_MS} ms: closed`);
    socket.destroy();
  });
  socket.once('close', () => {
    for (const serving of calls.values()) {
      serving.life.abort(new Error('the channel from the instance that forwarded the call closed'));
      serving.wake?.();
    }
    calls.clear();
  });
  if (rest.length > 0) read(rest);
}

/** One frame from the forwarding end: a call to serve, a cancel, credit for a streamed answer, a ping. */
function take(deps: ChannelServerDeps, { head, body }: Frame, calls: Map<number, Serving>, writes: Writes): void {
  const i = head['i'] as number;
  switch (head['k']) {
    case 'ping':
      writes.send({ k: 'pong', i: 0 });
      return;
    case 'cancel': {
      const serving = calls.get(i);
      serving?.life.abort(new Error('the instance that forwarded the call cancelled it (its client left)'));
      serving?.wake?.();
      return;
    }
    case 'more': {
      const serving = calls.get(i);
      if (!serving || typeof head['n'] !== 'number') return;
      serving.credit += head['n'];
      serving.wake?.();
      return;
    }
    case 'call': {
      if (calls.has(i)) return;
      const serving: Serving = { life: new Lifeline(), credit: STREAM_WINDOW, wake: undefined };
      calls.set(i, serving);
      deps.counted?.('accepted');
      const text = body.toString('utf8');
      background(
        'answer a call forwarded on a channel',
        answer(deps, head as unknown as CallHead, text, serving, writes)
          .catch((e: unknown) => {
            // As the HTTP layer's error boundary answers (app.ts): its sender is never left waiting.
            deps.logger.error({ err: (e as Error).message }, 'unhandled error serving a call forwarded on a channel');
            writes.send({ k: 'json', i, s: 500, h: { 'content-type': 'application/json' } }, internalError(text));
          })
          .finally(() => calls.delete(i)),
        deps.logger,
      );
    }
  }
}

/** The JSON-RPC internal error answering the request `body` carried (under its id). */
function internalError(body: string): string {
  let id: unknown = null;
  try {
    id = (JSON.parse(body) as { id?: unknown } | null)?.id ?? null;
  } catch {
    // not JSON: no id to answer under
  }
  return JSON.stringify({
    jsonrpc: '2.0',
    id: typeof id === 'string' || typeof id === 'number' ? id : null,
    error: { code: -32603, message: 'Internal error' },
  });
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

/** Serves one call and sends its answer: whole when JSON, else its head, its pieces (within the call's credit) and its end. */
async function answer(deps: ChannelServerDeps, head: CallHead, body: string, serving: Serving, writes: Writes): Promise<void> {
  const { i } = head;
  const headers = typeof head.h === 'object' && head.h !== null ? head.h : {};
  const call: ChannelCall = {
    path: String(head.p),
    caller: { principal: String(head.u), tokenScopes: Array.isArray(head.sc) ? new Set(head.sc.map(String)) : undefined },
    headers: { get: (name) => (typeof headers[name] === 'string' ? headers[name] : null) },
    body,
    life: { life: serving.life, dispose: () => undefined },
  };
  const res = await deps.serve(call);
  const made = jsonAnswerOf(res);
  const h = made ? returned((name) => made.headers[name]) : returned((name) => res.headers.get(name) ?? undefined);
  if (made || !res.body || (h['content-type'] ?? '').includes('application/json')) {
    const text = made ? made.text : res.body ? await res.text() : '';
    // Too long for a frame: this call's answer is cut (as over HTTP), never the channel.
    if (!writes.send({ k: 'json', i, s: made ? made.status : res.status, h }, text)) writes.send({ k: 'cut', i });
    return;
  }
  writes.send({ k: 'head', i, s: res.status, h });
  await streamPieces(res.body, i, serving, writes);
}

/** A streamed answer's pieces, each sent within the call's credit and as the socket takes them; then its end, or `cut`. */
async function streamPieces(stream: ReadableStream<Uint8Array>, i: number, serving: Serving, writes: Writes): Promise<void> {
  const reader = stream.getReader();
  // Cancelling the answer's stream ends its work (http/exchange.ts). It rejects only for a stream that
  // already failed, whose work is over: nothing to do then.
  const stop = (): void => {
    reader.cancel().then(undefined, () => undefined);
  };
  serving.life.addEventListener('abort', stop);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (let at = 0; at < value.length; at += MAX_PIECE) {
        while (serving.credit <= 0 && !serving.life.aborted) await new Promise<void>((r) => (serving.wake = r));
        serving.wake = undefined;
        if (serving.life.aborted) return;
        const piece = Buffer.from(value.buffer, value.byteOffset + at, Math.min(MAX_PIECE, value.length - at));
        serving.credit -= piece.length;
        writes.send({ k: 'data', i }, piece);
        await writes.drained();
      }
    }
    writes.send({ k: 'end', i });
  } catch {
    writes.send({ k: 'cut', i });
  } finally {
    serving.life.removeEventListener('abort', stop);
  }
}
