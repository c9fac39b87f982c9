/**
 * Counted bounds that must hold across instances: parked calls per principal and in total
 * (fronts/mrtr/parking.ts), tasks per principal and in total (fronts/tasks/registry.ts). A unit is
 * taken from several counters at once, all or nothing; in Redis this is one script.
 */
export interface QuotaCounter {
  readonly key: string;
  readonly limit: number;
}

export interface Quotas {
  /** Takes one unit from every counter if each stays within its limit; takes nothing otherwise. */
  acquire(counters: readonly QuotaCounter[]): Promise<boolean>;
  /** Gives back one unit of each key. */
  release(keys: readonly string[]): Promise<void>;
}

/** Quotas that can say, in the same atomic step, which counter refused (for an error that names the bound). */
export interface NamingQuotas extends Quotas {
  /** As `acquire`; -1 when taken, else the index of the first counter at its limit. */
  acquireNaming(counters: readonly QuotaCounter[]): Promise<number>;
}

export function namesRefusals(q: Quotas): q is NamingQuotas {
  return typeof (q as Partial<NamingQuotas>).acquireNaming === 'function';
}

export class InMemoryQuotas implements NamingQuotas {
  readonly #counts = new Map<string, number>();

  /** The current count of `key`. */
  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  async acquire(counters: readonly QuotaCounter[]): Promise<boolean> {
    return (await this.acquireNaming(counters)) === -1;
  }

  async acquireNaming(counters: readonly QuotaCounter[]): Promise<number> {
    const full = counters.findIndex((c) => this.count(c.key) >= c.limit);
    if (full !== -1) return full;
    for (const c of counters) this.#counts.set(c.key, this.count(c.key) + 1);
    return -1;
  }

  async release(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const n = this.count(key) - 1;
      if (n <= 0) this.#counts.delete(key);
      else this.#counts.set(key, n);
    }
  }
}
