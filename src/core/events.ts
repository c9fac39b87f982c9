/**
 * Gateway-wide events: a backend announced that one of its lists changed. Listen streams
 * (`subscriptions/listen`) subscribe here. An in-memory bus today; a Redis pub/sub plugs into the same
 * seam when several instances serve the same backends.
 */
export type ListChange = 'tools' | 'prompts' | 'resources';

export interface EventBus {
  /** Registers `listener`; returns the function that removes it. */
  onListChanged(listener: (kind: ListChange, backend: string) => void): () => void;
  /** Registers `listener` for bus shutdown; returns the function that removes it. */
  onClose(listener: () => void): () => void;
  emitListChanged(kind: ListChange, backend: string): void;
  /** Registers `listener` for resource updates a backend sent; returns the function that removes it. */
  onResourceUpdated(listener: (uri: string, backend: string) => void): () => void;
  emitResourceUpdated(uri: string, backend: string): void;
  /** Tells every subscriber the bus is going away. Idempotent. */
  close(): void;
}

export function createEventBus(): EventBus {
  const listeners = new Set<(kind: ListChange, backend: string) => void>();
  const updateListeners = new Set<(uri: string, backend: string) => void>();
  const closers = new Set<() => void>();
  let closed = false;
  return {
    onListChanged(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onResourceUpdated(listener) {
      updateListeners.add(listener);
      return () => updateListeners.delete(listener);
    },
    emitResourceUpdated(uri, backend) {
      for (const l of [...updateListeners]) {
        try {
          l(uri, backend);
        } catch {
          // one broken listener must not starve the others
        }
      }
    },
    onClose(listener) {
      if (closed) {
        listener();
        return () => undefined;
      }
      closers.add(listener);
      return () => closers.delete(listener);
    },
    emitListChanged(kind, backend) {
      for (const l of [...listeners]) {
        try {
          l(kind, backend);
        } catch {
          // one broken listener must not starve the others
        }
      }
    },
    close() {
      if (closed) return;
      closed = true;
      for (const c of [...closers]) c();
      closers.clear();
      listeners.clear();
      updateListeners.clear();
    },
  };
}
