/**
 * The capacity of an exclusive session pool: sessions at most, a share per group (principal), and the
 * starts under way that already hold a slot. The pool asks it; only it counts.
 */
export class PoolCapacity {
  readonly #max: number;
  readonly #perGroup: number;
  readonly #held = new Map<string, number>();
  #starting = 0;

  constructor(maxSessions: number, maxPerGroup = maxSessions) {
    this.#max = maxSessions;
    this.#perGroup = maxPerGroup;
  }

  /** Session starts under way. */
  get starting(): number {
    return this.#starting;
  }

  /** True when `group` holds its whole share: it waits, others go first. */
  atShare(group: string): boolean {
    return (this.#held.get(group) ?? 0) >= this.#perGroup;
  }

  /** `group` takes one of its share (a session bound to one of its calls, or being started for one). */
  take(group: string): void {
    this.#held.set(group, (this.#held.get(group) ?? 0) + 1);
  }

  /** `group` gives one back. */
  give(group: string): void {
    const n = (this.#held.get(group) ?? 1) - 1;
    if (n <= 0) this.#held.delete(group);
    else this.#held.set(group, n);
  }

  /** True when one more session fits beside `sessions` open ones and the starts under way. */
  fits(sessions: number): boolean {
    return sessions + this.#starting < this.#max;
  }

  /** A start holds a slot from here until `startEnded()`. */
  startBegun(): void {
    this.#starting++;
  }

  startEnded(): void {
    this.#starting--;
  }
}
