/**
 * What a composition root has opened, closed in reverse: each part pushes its closer as it is built, and
 * a start-up step that fails and `close()` run the same list, last pushed first.
 */
export type Closer = () => void | Promise<void>;

export class CloserStack {
  readonly #closers: { readonly what: string; readonly close: Closer }[] = [];
  #closing: Promise<void> | undefined;

  /** Adds what closes `what`; it runs before everything pushed earlier. */
  push(what: string, close: Closer): void {
    if (this.#closing) throw new Error(`cannot open ${what}: closing`);
    this.#closers.push({ what, close });
  }

  /**
   * Runs every closer once, last pushed first, each awaited before the next; one that fails is reported
   * to `onError` and the rest still run. Idempotent: later calls get the same promise.
   */
  close(onError?: (what: string, error: unknown) => void): Promise<void> {
    this.#closing ??= (async () => {
      for (const { what, close } of this.#closers.splice(0).reverse()) {
        try {
          await close();
        } catch (e) {
          onError?.(what, e);
        }
      }
    })();
    return this.#closing;
  }

  /** For a start-up step: closes what was opened, then rethrows. */
  async unwind(error: unknown, onError?: (what: string, error: unknown) => void): Promise<never> {
    await this.close(onError);
    throw error;
  }
}
