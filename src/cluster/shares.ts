/**
 * Fair shares: one unit of something a client holds open (a listen stream, an `await_activity` wait),
 * counted per principal and in total in one step through the `Quotas` seam — in a cluster that is
 * the same Redis script as the parked-call and task bounds, so both bounds hold across instances.
 * When the shared counters cannot be reached (Redis away), the unit is counted on this instance alone
 * with the same limits, so the bound still holds here and nothing waits on Redis.
 */
import { InMemoryQuotas, namesRefusals, type QuotaCounter, type Quotas } from './quotas.js';

export interface ShareLimits {
  /** The counter family, e.g. `listen` (keys `listen:<principal>` and `listen:*`). */
  readonly kind: string;
  readonly perPrincipal: number;
  readonly total: number;
}

/** A unit taken, or which bound refused it. */
export type ShareTaken = { readonly ok: true; release(): Promise<void> } | { readonly ok: false; readonly whose: 'principal' | 'total' };

export interface Shares {
  /** Takes one unit for `principal`. `release` gives it back (once; later calls do nothing). */
  take(principal: string, limits: ShareLimits): Promise<ShareTaken>;
}

/**
 * Shares over `quotas`; `onFallback` is told (with the error) each time the shared counters failed and
 * the unit was counted on this instance instead.
 */
export function createShares(quotas: Quotas, onFallback: (error: Error) => void = () => undefined): Shares {
  const local = new InMemoryQuotas();

  async function takeFrom(q: Quotas, principal: string, limits: ShareLimits): Promise<ShareTaken> {
    const keys = [`${limits.kind}:${principal}`, `${limits.kind}:*`] as const;
    const counters: QuotaCounter[] = [
      { key: keys[0], limit: limits.perPrincipal },
      { key: keys[1], limit: limits.total },
    ];
    if (namesRefusals(q)) {
      const full = await q.acquireNaming(counters);
      if (full !== -1) return { ok: false, whose: full === 0 ? 'principal' : 'total' };
    } else if (!(await q.acquire(counters))) return { ok: false, whose: await whoseBound(q, keys[1], limits.total) };
    let released = false;
    return {
      ok: true,
      async release() {
        if (released) return;
        released = true;
        await q.release(keys);
      },
    };
  }

  return {
    async take(principal, limits) {
      try {
        return await takeFrom(quotas, principal, limits);
      } catch (e) {
        onFallback(e instanceof Error ? e : new Error(String(e)));
        return takeFrom(local, principal, limits);
      }
    },
  };
}

/**
 * Which bound refused, for quotas that cannot say it themselves: the total alone is tried (and given
 * back at once when it had room). Only names the bound in the error; under concurrent refusals it may
 * name the total when the principal's was full as well.
 */
async function whoseBound(q: Quotas, totalKey: string, total: number): Promise<'principal' | 'total'> {
  if (!(await q.acquire([{ key: totalKey, limit: total }]))) return 'total';
  await q.release([totalKey]);
  return 'principal';
}
