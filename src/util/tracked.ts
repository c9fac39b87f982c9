/**
 * Work tracked until it settles, so that a `close()` can wait for every piece of it (a session's
 * close, a process's start) without keeping settled promises around.
 */
export class Tracked {
  readonly #pending = new Set<Promise<void>>();

  /** How many tracked promises have not settled yet. */
  get size(): number {
    return this.#pending.size;
  }

  /** Tracks `work`; its outcome is ignored here (whoever started it handles a failure). */
  add(work: PromiseLike<unknown>): void {
    const tracked: Promise<void> = Promise.resolve(work)
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }

  /** Resolves when everything tracked has settled, work added meanwhile included. */
  async settled(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }
}
