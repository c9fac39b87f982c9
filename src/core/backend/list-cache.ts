/**
 * A backend's lists, cached for a TTL (at least 1 s) or until invalidated, with concurrent fetches of
 * the same list shared.
 */
import type { CatalogKind } from './port.js';

type Items = Record<string, unknown>[];
const REFRESH_FLOOR_MS = 1_000;

export class ListCache {
  readonly #ttlMs: number;
  readonly #fetch: (kind: CatalogKind) => Promise<Items>;
  readonly #lists = new Map<CatalogKind, { items: Items; fetchedAt: number }>();
  readonly #pending = new Map<CatalogKind, Promise<Items>>();

  constructor(ttlMs: number, fetch: (kind: CatalogKind) => Promise<Items>) {
    this.#ttlMs = Math.max(ttlMs, 1_000);
    this.#fetch = fetch;
  }

  /**
   * The list, from cache while it is younger than the TTL. `fresh` asks for a refetch, but never more
   * than once per REFRESH_FLOOR_MS (a flood of unknown tool names must not become a flood of lists).
   */
  get(kind: CatalogKind, fresh = false): Promise<Items> {
    const cached = this.#lists.get(kind);
    const age = cached ? Date.now() - cached.fetchedAt : Infinity;
    if (cached && age < (fresh ? REFRESH_FLOOR_MS : this.#ttlMs)) return Promise.resolve(cached.items);
    let pending = this.#pending.get(kind);
    if (!pending) {
      pending = this.#fetch(kind)
        .then((items) => {
          this.#lists.set(kind, { items, fetchedAt: Date.now() });
          return items;
        })
        .finally(() => this.#pending.delete(kind));
      this.#pending.set(kind, pending);
    }
    return pending;
  }

  cached(kind: CatalogKind): Items | undefined {
    return this.#lists.get(kind)?.items;
  }

  /** Drops one list (and templates with resources), or all. */
  invalidate(kind?: CatalogKind): void {
    if (!kind) return this.#lists.clear();
    this.#lists.delete(kind);
    if (kind === 'resources') this.#lists.delete('resourceTemplates');
  }
}
