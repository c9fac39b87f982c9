/**
 * The frames of the channel between two instances (spec/notes/cluster.md, "The channel"): one
 * persistent TCP connection from a forwarding instance to an owner, opened by a signed HTTP upgrade
 * (forwarder.ts signs it, forward-verifier.ts checks it, its nonce spent once), then carrying many
 * forwarded calls and their answers. Each frame is `length (4 bytes) | MAC (32 bytes) | JSON`, its MAC
 * an HMAC-SHA256 under the connection's own key over its direction, its sequence number and its JSON:
 * a frame changed, dropped, replayed or injected on the way fails the next check, and the connection is
 * closed. The key is the cluster secret's HMAC over the upgrade's nonce (spent by the owner) and a salt
 * the owner picks, so no two connections share one and nothing of one can be replayed on another.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The upgrade's protocol name (`Upgrade:` header), and the path it asks for. */
export const CHANNEL_PROTOCOL = 'mcpgw-channel/1';
export const CHANNEL_PATH = '/_cluster/channel';
/** The owner's salt, on its 101 answer. */
export const SALT_HEADER = 'x-mcpgw-salt';

const HEAD = 4;
const MAC = 32;

/** Which end sent a frame: the forwarding instance (calls, cancels) or the owner (answers). */
export type Direction = 'forwarder' | 'owner';

/** A fresh salt for a new connection (the owner's). */
export const newSalt = (): string => randomBytes(16).toString('base64url');

/** The connection's key: the cluster secret over the upgrade's nonce and the owner's salt. */
export function channelKey(secret: string, nonce: string, salt: string): Buffer {
  return createHmac('sha256', secret).update(`mcpgw-channel\n${nonce}\n${salt}`).digest();
}

function macOf(key: Buffer, from: Direction, seq: number, json: Buffer): Buffer {
  return createHmac('sha256', key).update(`${from}\n${seq}\n`).update(json).digest();
}

/** Encodes the frames one end sends, numbering them. */
export class FrameWriter {
  readonly #key: Buffer;
  readonly #from: Direction;
  #seq = 0;

  constructor(key: Buffer, from: Direction) {
    this.#key = key;
    this.#from = from;
  }

  /** `message` as the next frame. */
  frame(message: unknown): Buffer {
    const json = Buffer.from(JSON.stringify(message));
    const out = Buffer.allocUnsafe(HEAD + MAC + json.length);
    out.writeUInt32BE(MAC + json.length, 0);
    macOf(this.#key, this.#from, this.#seq++, json).copy(out, HEAD);
    json.copy(out, HEAD + MAC);
    return out;
  }
}

/** Why a connection's bytes were refused: a frame longer than allowed, or one whose MAC or JSON is wrong. */
export class FrameError extends Error {}

/**
 * Decodes the frames the other end sends, as bytes arrive in any pieces: each frame's MAC is checked
 * against the next sequence number before its JSON is read. `maxBytes` bounds one frame.
 */
export class FrameReader {
  readonly #key: Buffer;
  readonly #from: Direction;
  readonly #maxBytes: number;
  #seq = 0;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** The length of the frame being read, head included, once its head is here. */
  #need: number | undefined;

  constructor(key: Buffer, from: Direction, maxBytes: number) {
    this.#key = key;
    this.#from = from;
    this.#maxBytes = maxBytes;
  }

  /** The whole frames `chunk` completes, in order; throws a FrameError at the first bad one (the connection is then done). */
  push(chunk: Buffer): unknown[] {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    const out: unknown[] = [];
    for (;;) {
      if (this.#need === undefined) {
        if (this.#pendingBytes < HEAD) break;
        const length = this.#joined().readUInt32BE(0);
        if (length < MAC || length > this.#maxBytes + MAC) throw new FrameError(`a frame of ${length} bytes`);
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

  #open(mac: Buffer, json: Buffer): unknown {
    if (!timingSafeEqual(mac, macOf(this.#key, this.#from, this.#seq++, json))) throw new FrameError('a frame whose MAC does not hold');
    try {
      return JSON.parse(json.toString('utf8')) as unknown;
    } catch {
      throw new FrameError('a frame that is not JSON');
    }
  }
}
