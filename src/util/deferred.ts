/**
 * A promise with its resolve/reject exposed, for owners that settle it from elsewhere.
 */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
  readonly settled: boolean;
}

/** Creates a {@link Deferred}. Settling twice is a no-op. */
export function createDeferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  let settled = false;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A deferred nobody awaits must not surface as an unhandled rejection.
  promise.catch(() => undefined);
  return {
    promise,
    get settled() {
      return settled;
    },
    resolve(value) {
      if (settled) return;
      settled = true;
      resolve(value);
    },
    reject(reason) {
      if (settled) return;
      settled = true;
      reject(reason);
    },
  };
}
