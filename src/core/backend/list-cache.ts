/**
 * A backend's lists, cached per view (the caller's capability set: servers show some tools only to
 * clients that declared e.g. elicitation) for a TTL (at least 1 s) or until invalidated, with
 * concurrent fetches of the same list shared. A backend's list change invalidates every view.
 * An invalidated list is fetched again on the next `get`, but stays known (`cached`) until then: a
 * backend that is restarting or down keeps its last known lists, so its tools stay routable and fail
 * with `backend_unavailable` rather than being unknown.
 */
import type { CatalogKind } from './port.js';

type Items = Record<string, unknown>[];
const REFRESH_FLOOR_MS = 1_000;
/** The view of the backend's primary session (used when no view is named). */
export const DEFAULT_VIEW = 'primary';

export class ListCache {
  readonly #ttlMs: number;
  readonly #fetch: (kind: CatalogKind, view: string) => Promise<Items>;
  /** view → kind → the last fetched list. */
  readonly #lists = new Map<string, Map<CatalogKind, { items: Items; fetchedAt: number }>>();
  /** Fetches under way, by `listKey`. */
  readonly #pending = new Map<string, Promise<Items>>();
  #generation = 0;

  readonly #shareInFlight: boolean;

  /** `shareInFlight` false: concurrent gets each fetch (the edge handler: a fetch belongs to the request that made it). */
  constructor(ttlMs: number, fetch: (kind: CatalogKind, view: string) => Promise<Items>, shareInFlight = true) {
    this.#ttlMs = Math.max(ttlMs, 1_000);
    this.#fetch = fetch;
    this.#shareInFlight = shareInFlight;
  }

  /**
   * The list, from cache while it is younger than the TTL. `fresh` asks for a refetch, but never more
   * than once per REFRESH_FLOOR_MS (a flood of unknown tool names must not become a flood of lists).
   */
  get(kind: CatalogKind, fresh = false, view = DEFAULT_VIEW): Promise<Items> {
    const cached = this.#lists.get(view)?.get(kind);
    const age = cached ? Date.now() - cached.fetchedAt : Infinity;
    if (cached && age < (fresh ? REFRESH_FLOOR_MS : this.#ttlMs)) return Promise.resolve(cached.items);
    const key = listKey(view, kind);
    let pending = this.#shareInFlight ? this.#pending.get(key) : undefined;
    if (!pending) {
      const generation = this.#generation;
      pending = this.#fetch(kind, view)
        .then((items) => {
          // A list fetched before an invalidation may already be stale: hand it out, do not keep it.
          if (generation === this.#generation) this.#keep(view, kind, items);
          return items;
        })
        .finally(() => {
          if (this.#pending.get(key) === pending) this.#pending.delete(key);
        });
      if (this.#shareInFlight) this.#pending.set(key, pending);
    }
    return pending;
  }

  /** The first item of `kind` with this `name` in any view's list held now (no I/O). */
  findCached(kind: CatalogKind, name: string): Record<string, unknown> | undefined {
    for (const lists of this.#lists.values()) {
      const found = lists.get(kind)?.items.find((i) => i['name'] === name);
      if (found) return found;
    }
    return undefined;
  }

  cached(kind: CatalogKind, view = DEFAULT_VIEW): Items | undefined {
    return this.#lists.get(view)?.get(kind)?.items;
  }

  /** Marks one list (and templates with resources) stale in every view, or everything: the next `get` fetches it again. */
  invalidate(kind?: CatalogKind): void {
    this.#generation++;
    const kinds: readonly CatalogKind[] | undefined = kind === undefined ? undefined : kind === 'resources' ? ['resources', 'resourceTemplates'] : [kind];
    for (const lists of this.#lists.values()) {
      for (const [k, entry] of lists) if (!kinds || kinds.includes(k)) entry.fetchedAt = -Infinity;
    }
  }

  #keep(view: string, kind: CatalogKind, items: Items): void {
    let lists = this.#lists.get(view);
    if (!lists) this.#lists.set(view, (lists = new Map()));
    lists.set(kind, { items, fetchedAt: Date.now() });
  }
}

/** The key of a fetch under way (never read back). */
function listKey(view: string, kind: CatalogKind): string {
  return `${view}\u0000${kind}`;
}
