/**
 * The frames of the channel between two instances (spec/notes/cluster.md, "The channel"): one
 * persistent TCP connection from a forwarding instance to an owner, opened by a signed HTTP `CONNECT`
 * (forwarder.ts signs it, forward-verifier.ts checks it, its nonce spent once), then carrying many
 * forwarded calls and their answers. Each frame is `length (4) | MAC (32) | head length (4) | head
 * (JSON) | body (bytes, as they are)`, its MAC an HMAC-SHA256 under the connection's own key over its
 * direction, its sequence number and the rest: a frame changed, dropped, replayed or injected on the
 * way fails the next check, and the connection is closed. The key is the cluster secret's HMAC over the `CONNECT`'s nonce (spent by the owner) and a salt
 * the owner picks, so no two connections share one and nothing of one can be replayed on another.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The channel's protocol (the `CONNECT`'s `x-mcpgw-protocol` header), and the path it asks for. */
export const CHANNEL_PROTOCOL = 'mcpgw-channel/1';
export const CHANNEL_PATH = '/_cluster/channel';
/** The owner's salt, on its 200 answer to the `CONNECT`. */
export const SALT_HEADER = 'x-mcpgw-salt';

/**
 * How often the channel asks the owner whether it is there (a `ping` frame; it answers `pong`): a
 * channel that heard nothing from its owner through a whole interval is closed (a network that drops
 * silently, an owner frozen that long), its calls then answered `forward_cut`, and the next forward
 * opens a new one or goes over HTTP. The owner closes a channel silent for several intervals (gateway/channel-server.ts).
 */
export const PING_MS = 10_000;
/** The longest call frame an owner takes: the longest body a client may send, and room for its head. */
export const MAX_CALL_FRAME = 4 * 1024 * 1024 + 64 * 1024;
/** The longest answer frame (as the HTTP forward's longest JSON answer); a longer answer is that call's cut, never the channel's. */
export const MAX_ANSWER_FRAME = 64 * 1024 * 1024;
/** The longest piece of a streamed answer in one frame (a longer piece is sent in several). */
export const MAX_PIECE = 256 * 1024;
/**
 * How many bytes of a streamed answer the owner may send ahead of what the forwarding end handed to
 * its client (per call): the owner waits for more credit past it (a `more` frame), so a slow client
 * holds its own call back, never the channel's memory nor the other calls on it.
 */
export const STREAM_WINDOW = 1024 * 1024;

const HEAD = 4;
const MAC = 32;

/** Which end sent a frame: the forwarding instance (calls, cancels) or the owner (answers). */
export type Direction = 'forwarder' | 'owner';

/** A fresh salt for a new connection (the owner's). */
export const newSalt = (): string => randomBytes(16).toString('base64url');

/** The connection's key: the cluster secret over the `CONNECT`'s nonce and the owner's salt. */
export function channelKey(secret: string, nonce: string, salt: string): Buffer {
  return createHmac('sha256', secret).update(`mcpgw-channel\n${nonce}\n${salt}`).digest();
}

function macOf(key: Buffer, from: Direction, seq: number, content: Buffer): Buffer {
  return createHmac('sha256', key).update(`${from}\n${seq}\n`).update(content).digest();
}

/** One frame: what it says (a small JSON object) and the bytes it carries (a body, an answer, a piece of a stream), as they are. */
export interface Frame {
  readonly head: Record<string, unknown>;
  readonly body: Buffer;
}

/** The bytes of a frame carrying `head` and `body`, beyond its length and MAC. */
const frameBytes = (headBytes: number, bodyBytes: number): number => HEAD + headBytes + bodyBytes;

/** Encodes the frames one end sends, numbering them. */
export class FrameWriter {
  readonly #key: Buffer;
  readonly #from: Direction;
  #seq = 0;

  constructor(key: Buffer, from: Direction) {
    this.#key = key;
    this.#from = from;
  }

  /** `head` (JSON) with `body` (bytes, carried as they are: no escaping) as the next frame. */
  frame(head: Record<string, unknown>, body: Buffer | string = EMPTY): Buffer {
    return this.bounded(head, body, Infinity)!;
  }

  /** The same, or undefined (nothing numbered) when the frame would be longer than `maxBytes`. */
  bounded(head: Record<string, unknown>, body: Buffer | string, maxBytes: number): Buffer | undefined {
    const json = Buffer.from(JSON.stringify(head));
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const content = frameBytes(json.length, bytes.length);
    if (content > maxBytes) return undefined;
    const out = Buffer.allocUnsafe(HEAD + MAC + content);
    out.writeUInt32BE(MAC + content, 0);
    out.writeUInt32BE(json.length, HEAD + MAC);
    json.copy(out, HEAD + MAC + HEAD);
    bytes.copy(out, HEAD + MAC + HEAD + json.length);
    macOf(this.#key, this.#from, this.#seq++, out.subarray(HEAD + MAC)).copy(out, HEAD);
    return out;
  }
}

const EMPTY = Buffer.alloc(0);

/** Why a connection's bytes were refused: a frame longer than allowed, or one whose MAC or head is wrong. */
export class FrameError extends Error {}

/**
 * Decodes the frames the other end sends, as bytes arrive in any pieces: each frame's MAC is checked
 * against the next sequence number before its head is read. `maxBytes` bounds one frame (head and
 * body), checked as soon as its length is read.
 */
export class FrameReader {
  readonly #key: Buffer;
  readonly #from: Direction;
  readonly #maxBytes: number;
  #seq = 0;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** The length of the frame being read, its length field included, once that field is here. */
  #need: number | undefined;

  constructor(key: Buffer, from: Direction, maxBytes: number) {
    this.#key = key;
    this.#from = from;
    this.#maxBytes = maxBytes;
  }

  /** The whole frames `chunk` completes, in order; throws a FrameError at the first bad one (the connection is then done). */
  push(chunk: Buffer): Frame[] {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    const out: Frame[] = [];
    for (;;) {
      if (this.#need === undefined) {
        if (this.#pendingBytes < HEAD) break;
        const length = this.#joined().readUInt32BE(0);
        if (length < MAC + HEAD || length > this.#maxBytes + MAC) throw new FrameError(`a frame of ${length} bytes (at most ${this.#maxBytes} are taken)`);
        this.#need = HEAD + length;
      }
      // Joined once the whole frame is here (a long answer arrives in many pieces).
      if (this.#pendingBytes < this.#need) break;
      const buf = this.#joined();
      out.push(this.#open(buf.subarray(HEAD, HEAD + MAC), buf.subarray(HEAD + MAC, this.#need)));
      const rest = buf.subarray(this.#need);
      this.#pending = rest.length > 0 ? [rest] : [];
      this.#pendingBytes = rest.length;
      this.#need = undefined;
    }
    return out;
  }

  /** The pending bytes as one buffer (joined, and kept so, when they came in pieces). */
  #joined(): Buffer {
    if (this.#pending.length !== 1) this.#pending = [Buffer.concat(this.#pending, this.#pendingBytes)];
    return this.#pending[0]!;
  }

  #open(mac: Buffer, content: Buffer): Frame {
    if (!timingSafeEqual(mac, macOf(this.#key, this.#from, this.#seq++, content))) throw new FrameError('a frame whose MAC does not hold');
    const headBytes = content.readUInt32BE(0);
    if (headBytes > content.length - HEAD) throw new FrameError('a frame whose head is longer than the frame');
    let head: unknown;
    try {
      head = JSON.parse(content.toString('utf8', HEAD, HEAD + headBytes)) as unknown;
    } catch {
      throw new FrameError('a frame whose head is not JSON');
    }
    if (typeof head !== 'object' || head === null || Array.isArray(head) || typeof (head as { i?: unknown }).i !== 'number') {
      throw new FrameError('a frame whose head is not an object with a number');
    }
    // A copy: the frame's bytes are kept no longer than its body is (a body is small beside a joined buffer).
    return { head: head as Record<string, unknown>, body: Buffer.from(content.subarray(HEAD + headBytes)) };
  }
}
