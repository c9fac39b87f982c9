/**
 * A deadline for clients that stop taking what the gateway sends them (nginx's `send_timeout`, 60 s
 * there too): a connection with bytes waiting in the process, because the client's side of the socket
 * is full, that has not taken a byte of them for `ms` is closed. Without it such a client held its
 * connection for as long as it liked: a slot of `maxConnections`, a file descriptor, and up to an SSE
 * queue's bound of memory (util/sse-queue.ts) each, a slow-read attack's whole cost to the attacker.
 *
 * Only a client that stops reading is cut: a connection with nothing waiting (an idle keep-alive, a call
 * whose backend is slow, an SSE stream between events) is never looked at, and a client that reads,
 * however slowly, is making progress. Progress is counted in bytes the system took from the process,
 * partial writes included (libuv's write queue, so a large answer written at once does not look stalled
 * while a slow client works through it). Closing the socket is what a client that went away does, and
 * the gateway answers it the same way (an SSE stream's call is told its client left).
 *
 * One timer for every connection of a server, unref'd, checking a quarter of the deadline apart. A look
 * that comes late (the event loop blocked, the process stopped) cuts nothing: what a client took meanwhile
 * is seen only after the loop polls its sockets again, so every stall counts from then. The connections
 * of other instances' channels (cluster mode, an HTTP CONNECT) are connections of this server too: one
 * is cut only when the instance at its other end takes nothing for the deadline (frozen that long).
 */
import type { Server, Socket } from 'node:net';

/** Where a socket stood at the last look while it had bytes waiting. */
interface Mark {
  /** Bytes the system has taken so far (each partial write counted). */
  taken: number;
  /** When `taken` last grew (performance.now()). */
  since: number;
}

/**
 * Bytes the system has taken from `socket` so far: those handed to libuv less those still in its write
 * queue, which a partial write shortens (undefined without a handle: the socket is closing).
 */
function takenFrom(socket: Socket): number | undefined {
  const handle = (socket as Socket & { _handle?: { bytesWritten?: number; writeQueueSize?: number } | null })._handle;
  return handle ? (handle.bytesWritten ?? 0) - (handle.writeQueueSize ?? 0) : undefined;
}

/**
 * Closes each connection of `server` that leaves what is written to it untaken for `ms`; `onCut` is
 * told of each. Returns a function that stops watching (the server's close does too).
 */
export function cutStalledSends(server: Server, ms: number, onCut: () => void): () => void {
  /** Each open connection, with its mark while it has bytes waiting. */
  const sockets = new Map<Socket, Mark | undefined>();
  const onConnection = (socket: Socket): void => {
    sockets.set(socket, undefined);
    socket.once('close', () => sockets.delete(socket));
  };
  const every = Math.max(50, Math.round(ms / 4));
  let lookedAt = performance.now();
  const look = (): void => {
    const now = performance.now();
    const late = now - lookedAt > 2 * every;
    lookedAt = now;
    for (const [socket, mark] of sockets) {
      const taken = socket.writableLength === 0 || socket.destroyed ? undefined : takenFrom(socket);
      if (taken === undefined || !mark || taken > mark.taken || late) {
        sockets.set(socket, taken === undefined ? undefined : { taken, since: now });
        continue;
      }
      if (now - mark.since < ms) continue;
      sockets.delete(socket);
      socket.destroy();
      onCut();
    }
  };
  server.on('connection', onConnection);
  const timer = setInterval(look, every);
  timer.unref();
  const stop = (): void => {
    clearInterval(timer);
    server.off('connection', onConnection);
    server.off('close', stop);
  };
  server.on('close', stop);
  return stop;
}
