/**
 * A promise with its resolve/reject exposed, for owners that settle it from elsewhere.
 */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
  readonly settled: boolean;
}

const ignore = (): void => undefined;

/**
 * A class rather than an object literal with a getter: every parked call holds one, and a literal's
 * accessor gave each its own hidden class and a dictionary of properties (issue 30: about 0.5 KiB).
 */
class Settleable<T> implements Deferred<T> {
  readonly promise: Promise<T>;
  #resolve!: (value: T) => void;
  #reject!: (reason: unknown) => void;
  #settled = false;

  constructor(handedOn: boolean) {
    this.promise = new Promise<T>((res, rej) => {
      this.#resolve = res;
      this.#reject = rej;
    });
    // A deferred nobody awaits must not surface as an unhandled rejection.
    if (!handedOn) this.promise.catch(ignore);
  }

  get settled(): boolean {
    return this.#settled;
  }

  resolve(value: T): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(value);
  }

  reject(reason: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(reason);
  }
}

/**
 * Creates a {@link Deferred}. Settling twice is a no-op. Its methods are not bound: call them on it.
 * `handedOn`: the caller hands the promise at once to code that handles its rejection, so it needs
 * no handler of its own against an unhandled rejection (one promise and reaction fewer: a parked
 * call holds one deferred, issue 30).
 */
export function createDeferred<T>(handedOn = false): Deferred<T> {
  return new Settleable<T>(handedOn);
}
