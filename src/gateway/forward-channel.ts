/**
 * The forwarding end of the channels to the other instances (spec/notes/cluster.md, "The channel"):
 * one TCP connection to each owner, opened by an HTTP `CONNECT` to its internal URL signed as a
 * forward is (its nonce spent once, for the owner's boot), then carrying every forwarded call whose
 * caller this instance authenticated, and its answer, as frames under the connection's own key
 * (cluster/channel-frames.ts). A forwarded retry then costs the owner no HTTP front, and this instance
 * no HTTP exchange of its own (issue 30: a forwarded retry was 1.6 to 2.1 times a retry on its owner).
 *
 * An owner whose channel cannot be opened (unreachable, an earlier version, a proxy on the way) gets
 * its forwards over HTTP as before, and is tried again after RETRY_CHANNEL_MS. A call written on a
 * channel that then closes is answered `forward_cut` (it may have run there), never sent again; a
 * call whose sender gives up (its client left, the owner taken for gone) is cancelled at the owner.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import {
  CHANNEL_PATH,
  CHANNEL_PROTOCOL,
  FrameReader,
  FrameWriter,
  MAX_ANSWER_FRAME,
  MAX_CALL_FRAME,
  PING_MS,
  SALT_HEADER,
  channelKey,
  type Frame,
} from '../cluster/channel-frames.js';
import { errorAnswerFor } from '../cluster/forward-answer.js';
import type { ForwardAnswer } from '../cluster/forwarder.js';
import { BOOT } from '../cluster/forward-signing.js';
import type { CancelSource } from '../util/lifeline.js';

/** How long a connection to the owner, and its `CONNECT`, may take. */
const CONNECT_MS = 10_000;
/** How long an owner whose channel could not be opened gets its forwards over HTTP before it is tried again. */
const RETRY_CHANNEL_MS = 30_000;

/** A call as the channel carries it to the owner. */
export interface ChannelCallOut {
  /** The public path the client sent it to. */
  readonly path: string;
  readonly principal: string;
  /** With OAuth: the scopes its token grants. */
  readonly scopes: ReadonlySet<string> | undefined;
  /** The client's headers that travel with a forward, by lower-case name. */
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface ForwardChannelsDeps {
  readonly secret: string;
  /** An owner's internal URL (undefined: it has none, or is gone). */
  urlOf(owner: string): Promise<string | undefined>;
  /** The signed head of a `CONNECT` to `owner`, for `forBoot` (default: its boot as last heard), and the nonce it spends. */
  head(owner: string, forBoot: string | undefined): { headers: Record<string, string>; nonce: string; signedFor: string | undefined };
  /** What an owner said its boot id is. */
  heard(owner: string, boot: string): void;
  /** An answer on its way was lost (the channel closed): its client is told the call may have run. */
  onCut(error: Error): void;
  /** A channel to `owner` opened. */
  onOpen?(owner: string): void;
  /** A channel could not be opened (`why`): forwards to that owner go over HTTP for a while. */
  onUnavailable?(owner: string, why: string, forMs: number): void;
}

export interface ForwardChannels {
  /**
   * Sends `call` to `owner` on its channel: the owner's answer (JSON read whole, an SSE stream as it
   * comes), or undefined when no channel to it can be opened (the caller then forwards it over HTTP:
   * nothing was sent). Rejects with the reason when `signal` aborts first (the call is cancelled there).
   */
  send(owner: string, call: ChannelCallOut, signal: CancelSource): Promise<ChannelAnswer | undefined>;
  /** Closes the channel to `owner` (it is gone) and forgets it could not be opened. */
  forget(owner: string): void;
  /** Closes every channel: what was on its way is answered `gateway_closing`. */
  close(): void;
}

export function createForwardChannels(deps: ForwardChannelsDeps): ForwardChannels {
  /** The open channel to each owner, and the opening under way (one at a time per owner). */
  const ready = new Map<string, Channel>();
  const pending = new Map<string, Promise<Channel | undefined>>();
  /** How many times each owner was forgotten: a channel that opens after its owner was forgotten is closed. */
  const forgotten = new Map<string, number>();
  const unavailableUntil = new Map<string, number>();
  const connecting = new Set<ClientRequest>();
  let closing = false;
  const unavailable = (owner: string, why: string, forMs = RETRY_CHANNEL_MS): undefined => {
    unavailableUntil.set(owner, Date.now() + forMs);
    deps.onUnavailable?.(owner, why, forMs);
    return undefined;
  };
  /** The channel `connect` opened, kept as `owner`'s unless this instance closes or forgot that owner meanwhile. */
  const keep = (owner: string, channel: Channel, era: number): Channel | undefined => {
    if (closing || (forgotten.get(owner) ?? 0) !== era) {
      channel.close();
      return undefined;
    }
    ready.set(owner, channel);
    channel.onClosed = () => {
      if (ready.get(owner) === channel) ready.delete(owner);
    };
    deps.onOpen?.(owner);
    return channel;
  };
  const open = async (owner: string): Promise<Channel | undefined> => {
    const era = forgotten.get(owner) ?? 0;
    const base = await deps.urlOf(owner);
    if (!base || closing) return undefined;
    const url = new URL(CHANNEL_PATH, base);
    if (url.protocol !== 'http:') return unavailable(owner, `its internal URL is ${url.protocol}: forwards go over it`);
    let forBoot: string | undefined;
    // A second time only after a 421 naming the owner's boot (not heard yet, or it restarted since).
    for (let attempt = 0; attempt < 2; attempt++) {
      const head = deps.head(owner, forBoot);
      const answer = await connect(url, head.headers, connecting);
      if (answer.kind === 'failed') return unavailable(owner, answer.why);
      const boot = headerOf(answer.res, BOOT);
      if (boot !== undefined) deps.heard(owner, boot);
      if (answer.kind === 'open') {
        const salt = headerOf(answer.res, SALT_HEADER);
        if (salt === undefined) {
          answer.socket.destroy();
          return unavailable(owner, 'it opened a channel without a salt');
        }
        return keep(owner, new Channel(answer.socket, channelKey(deps.secret, head.nonce, salt), answer.rest, deps.onCut, () => closing), era);
      }
      // Still starting (node-listeners.ts): tried again after its Retry-After, not 30 s.
      if (answer.status === 503) return unavailable(owner, 'it is starting', startingFor(answer.res));
      if (answer.status !== 421 || boot === undefined || boot === head.signedFor) return unavailable(owner, `its answer to the CONNECT was ${answer.status}`);
      forBoot = boot;
    }
    return unavailable(owner, 'it answered 421 twice');
  };
  const channelTo = async (owner: string): Promise<Channel | undefined> => {
    const held = ready.get(owner);
    if (held && !held.closed) return held;
    if ((unavailableUntil.get(owner) ?? 0) > Date.now()) return undefined;
    let opening = pending.get(owner);
    if (!opening) {
      // Never rejects: a channel that cannot be had (Redis away when its URL is asked) is none, and
      // the forward goes over HTTP, which tells the client what it can be told.
      opening = open(owner)
        .catch(() => undefined)
        .finally(() => pending.delete(owner));
      pending.set(owner, opening);
    }
    const channel = await opening;
    return channel && !channel.closed ? channel : undefined;
  };
  return {
    async send(owner, call, signal) {
      if (closing) return undefined;
      const channel = await channelTo(owner);
      return channel ? channel.call(call, signal) : undefined;
    },
    forget(owner) {
      unavailableUntil.delete(owner);
      forgotten.set(owner, (forgotten.get(owner) ?? 0) + 1);
      ready.get(owner)?.close();
      ready.delete(owner);
    },
    close() {
      closing = true;
      for (const req of connecting) req.destroy();
      for (const channel of ready.values()) channel.close();
      ready.clear();
    },
  };
}

type Connected =
  | { kind: 'open'; res: IncomingMessage; socket: Socket; rest: Buffer }
  | { kind: 'answer'; res: IncomingMessage; status: number }
  | { kind: 'failed'; why: string };

/** A `CONNECT` to the owner's channel path, within CONNECT_MS. */
function connect(url: URL, headers: Record<string, string>, opening: Set<ClientRequest>): Promise<Connected> {
  return new Promise((resolve) => {
    const req = request({
      host: url.hostname,
      port: url.port || 80,
      method: 'CONNECT',
      path: CHANNEL_PATH,
      headers: { ...headers, 'x-mcpgw-protocol': CHANNEL_PROTOCOL },
      agent: false,
      timeout: CONNECT_MS,
    });
    opening.add(req);
    const done = (answer: Connected): void => {
      opening.delete(req);
      resolve(answer);
    };
    req.on('connect', (res: IncomingMessage, socket: Socket, rest: Buffer) => {
      if (res.statusCode === 200) {
        socket.setTimeout(0);
        done({ kind: 'open', res, socket, rest });
      } else {
        socket.destroy();
        done({ kind: 'answer', res, status: res.statusCode ?? 0 });
      }
    });
    req.on('response', (res: IncomingMessage) => {
      res.resume();
      done({ kind: 'answer', res, status: res.statusCode ?? 0 });
    });
    req.on('timeout', () => req.destroy(new Error(`no channel within ${CONNECT_MS} ms`)));
    req.on('error', (e) => done({ kind: 'failed', why: e.message }));
    req.end();
  });
}

/** How long an owner that answered 503 gets its forwards over HTTP: its Retry-After (seconds), 1 s to RETRY_CHANNEL_MS. */
function startingFor(res: IncomingMessage): number {
  const seconds = Number(headerOf(res, 'retry-after'));
  return Number.isFinite(seconds) ? Math.min(RETRY_CHANNEL_MS, Math.max(1_000, seconds * 1_000)) : 1_000;
}

function headerOf(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A call on its way: how its answer is handed on, and what its sender listens to. */
interface Waiting {
  readonly body: string;
  readonly signal: CancelSource;
  readonly onAbort: () => void;
  resolve(answer: ChannelAnswer): void;
  reject(reason: unknown): void;
  /** Once the answer is a stream: where its pieces go, and the bytes handed on since the owner was last given credit. */
  stream?: ReadableStreamDefaultController<Uint8Array>;
  unacknowledged?: number;
}

/** One channel to one owner: its calls in flight by number. */
class Channel {
  closed = false;
  onClosed: (() => void) | undefined;
  readonly #socket: Socket;
  readonly #writer: FrameWriter;
  readonly #reader: FrameReader;
  readonly #onCut: (error: Error) => void;
  readonly #closing: () => boolean;
  readonly #calls = new Map<number, Waiting>();
  #next = 0;
  readonly #pinger: ReturnType<typeof setInterval>;
  /** Whether a frame came from the owner since the last ping. */
  #heard = true;

  constructor(socket: Socket, key: Buffer, rest: Buffer, onCut: (error: Error) => void, closing: () => boolean) {
    this.#socket = socket;
    this.#writer = new FrameWriter(key, 'forwarder');
    this.#reader = new FrameReader(key, 'owner', MAX_ANSWER_FRAME);
    this.#onCut = onCut;
    this.#closing = closing;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', (e) => onCut(new Error(`the channel to the instance that holds it failed: ${e.message}`)));
    // The owner's end closed its side: this one is done too (a half-open socket would hold its calls).
    socket.on('end', () => socket.destroy());
    socket.on('close', () => this.#closed());
    this.#pinger = setInterval(() => this.#ping(), PING_MS);
    this.#pinger.unref();
    if (rest.length > 0) this.#read(rest);
  }

  /**
   * Sends `call`; its answer. Undefined when nothing was sent: the channel closed before the call
   * could be written, or the call is longer than the owner takes in one frame (it goes over HTTP).
   */
  call(call: ChannelCallOut, signal: CancelSource): Promise<ChannelAnswer | undefined> {
    if (this.closed || !this.#socket.writable) return Promise.resolve(undefined);
    if (signal.aborted) return Promise.reject(signal.reason);
    const i = this.#next + 1;
    const head = { k: 'call', i, p: call.path, u: call.principal, sc: call.scopes ? [...call.scopes] : null, h: call.headers };
    const frame = this.#writer.bounded(head, call.body, MAX_CALL_FRAME);
    if (!frame) return Promise.resolve(undefined);
    this.#next = i;
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { body: call.body, signal, onAbort: () => this.#cancel(i), resolve, reject };
      signal.addEventListener('abort', waiting.onAbort, { once: true });
      this.#calls.set(i, waiting);
      this.#socket.write(frame);
    });
  }

  close(): void {
    this.#socket.destroy();
  }

  #send(head: Record<string, unknown>): void {
    if (!this.closed) this.#socket.write(this.#writer.frame(head));
  }

  #ping(): void {
    if (!this.#heard) {
      this.#onCut(new Error(`the instance that holds it answered nothing on its channel for ${PING_MS} ms`));
      this.#socket.destroy();
      return;
    }
    this.#heard = false;
    this.#send({ k: 'ping', i: 0 });
  }

  #read(chunk: Buffer): void {
    this.#heard = true;
    let frames: Frame[];
    try {
      frames = this.#reader.push(chunk);
    } catch (e) {
      this.#onCut(new Error(`the instance that holds it sent what this cluster does not sign: ${(e as Error).message}`));
      this.#socket.destroy();
      return;
    }
    for (const frame of frames) this.#answer(frame);
  }

  #answer({ head, body }: Frame): void {
    const i = head['i'] as number;
    const waiting = this.#calls.get(i);
    if (!waiting) return; // a pong, or a call cancelled here since
    const status = typeof head['s'] === 'number' ? head['s'] : 502;
    switch (head['k']) {
      case 'json':
        this.#done(i, waiting);
        waiting.resolve({ status, headers: headersOf(head['h']), body: body.toString('utf8') });
        return;
      case 'head':
        waiting.resolve({ status, headers: headersOf(head['h']), body: this.#stream(i, waiting) });
        return;
      case 'data':
        waiting.unacknowledged = (waiting.unacknowledged ?? 0) + body.length;
        waiting.stream?.enqueue(body);
        return;
      case 'end':
        this.#done(i, waiting);
        waiting.stream?.close();
        return;
      case 'cut':
        // The owner could not send its answer whole (too long for a frame, its stream failed).
        this.#done(i, waiting);
        this.#onCut(new Error('the instance that holds it could not send its answer whole'));
        if (waiting.stream) waiting.stream.error(new Error('the owner ended its answer before it was whole'));
        else waiting.resolve(cutAnswer(waiting.body));
    }
  }

  /**
   * The body of a streamed answer. The owner sends STREAM_WINDOW bytes ahead at most: each time the
   * client's side reads (`pull`), what it took is given back as credit. Its reader cancelling it
   * cancels the call at the owner.
   */
  #stream(i: number, waiting: Waiting): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          waiting.stream = controller;
          waiting.unacknowledged = 0;
        },
        pull: () => {
          const taken = waiting.unacknowledged ?? 0;
          if (taken > 0 && this.#calls.has(i)) this.#send({ k: 'more', i, n: taken });
          waiting.unacknowledged = 0;
        },
        cancel: () => this.#cancel(i),
      },
      { highWaterMark: 0 },
    );
  }

  #done(i: number, waiting: Waiting): void {
    this.#calls.delete(i);
    waiting.signal.removeEventListener('abort', waiting.onAbort);
  }

  /** The sender gave up on call `i`: the owner is told, and the call's answer ends here. */
  #cancel(i: number): void {
    const waiting = this.#calls.get(i);
    if (!waiting) return;
    this.#done(i, waiting);
    this.#send({ k: 'cancel', i });
    const reason = waiting.signal.reason ?? new Error('the forward was cancelled');
    if (waiting.stream) waiting.stream.error(reason);
    else waiting.reject(reason);
  }

  /** The connection closed: each call on its way is answered, as cut (it may have run) or as closing with this instance. */
  #closed(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.#pinger);
    this.onClosed?.();
    const error = new Error('the channel to the instance that holds it closed');
    const calls = [...this.#calls];
    this.#calls.clear();
    for (const [, waiting] of calls) {
      waiting.signal.removeEventListener('abort', waiting.onAbort);
      if (waiting.stream) {
        waiting.stream.error(error);
        continue;
      }
      if (this.#closing()) {
        waiting.resolve(errorAnswerFor(waiting.body, 'gateway_closing'));
        continue;
      }
      this.#onCut(error);
      waiting.resolve(cutAnswer(waiting.body));
    }
  }
}

/** A channel's answer: the owner's, or one made here (`cut`: the owner's answer was lost on its way; it may have run). */
export type ChannelAnswer = ForwardAnswer & { readonly cut?: true };

/** The `forward_cut` answer to the request `body` carried, marked as made here (counted as cut, not answered). */
function cutAnswer(body: string): ChannelAnswer {
  return { ...errorAnswerFor(body, 'forward_cut'), cut: true };
}

function headersOf(h: unknown): ForwardAnswer['headers'] {
  const record = typeof h === 'object' && h !== null ? (h as Record<string, unknown>) : {};
  return {
    get: (name) => {
      const v = record[name];
      return typeof v === 'string' ? v : null;
    },
  };
}
