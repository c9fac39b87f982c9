/**
 * Gateway-wide events: a backend announced that one of its lists changed or a resource was updated, or
 * its main connection came up or was lost. Listen streams (`subscriptions/listen`), legacy sessions and
 * proxy-tools scopes subscribe here. One instance uses the in-memory bus below; in a cluster,
 * `cluster-events.ts` wraps it so every instance hears each event once.
 */
export type ListChange = 'tools' | 'prompts' | 'resources';

/** A backend's main connection came up, or was lost (it reconnects with backoff). */
export type ConnectionChange = 'connected' | 'lost';

export interface EventBus {
  /** Registers `listener`; returns the function that removes it. */
  onListChanged(listener: (kind: ListChange, backend: string) => void): () => void;
  /** Registers `listener` for bus shutdown; returns the function that removes it. */
  onClose(listener: () => void): () => void;
  emitListChanged(kind: ListChange, backend: string): void;
  /** Registers `listener` for resource updates a backend sent; returns the function that removes it. */
  onResourceUpdated(listener: (uri: string, backend: string) => void): () => void;
  emitResourceUpdated(uri: string, backend: string): void;
  /** Registers `listener` for backends' connection changes; returns the function that removes it. */
  onConnection(listener: (change: ConnectionChange, backend: string) => void): () => void;
  emitConnection(change: ConnectionChange, backend: string): void;
  /** Tells every subscriber the bus is going away. Idempotent. */
  close(): void;
}

/** Calls every listener with `args`; one that throws must not starve the others. */
function fanOut<A extends unknown[]>(listeners: ReadonlySet<(...args: A) => void>, ...args: A): void {
  for (const l of [...listeners]) {
    try {
      l(...args);
    } catch {
      // a broken listener is its own problem
    }
  }
}

/** Adds `listener` to `set`; returns the function that removes it. */
function subscribe<L>(set: Set<L>, listener: L): () => void {
  set.add(listener);
  return () => void set.delete(listener);
}

export function createEventBus(): EventBus {
  const listChanged = new Set<(kind: ListChange, backend: string) => void>();
  const resourceUpdated = new Set<(uri: string, backend: string) => void>();
  const connection = new Set<(change: ConnectionChange, backend: string) => void>();
  const closers = new Set<() => void>();
  let closed = false;
  return {
    onListChanged: (listener) => subscribe(listChanged, listener),
    emitListChanged: (kind, backend) => fanOut(listChanged, kind, backend),
    onResourceUpdated: (listener) => subscribe(resourceUpdated, listener),
    emitResourceUpdated: (uri, backend) => fanOut(resourceUpdated, uri, backend),
    onConnection: (listener) => subscribe(connection, listener),
    emitConnection: (change, backend) => fanOut(connection, change, backend),
    onClose(listener) {
      if (closed) {
        listener();
        return () => undefined;
      }
      return subscribe(closers, listener);
    },
    close() {
      if (closed) return;
      closed = true;
      for (const c of [...closers]) c();
      closers.clear();
      listChanged.clear();
      resourceUpdated.clear();
      connection.clear();
    },
  };
}
