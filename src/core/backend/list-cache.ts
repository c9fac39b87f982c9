/**
 * A backend's lists, cached for a TTL (at least 1 s) or until invalidated, with concurrent fetches of
 * the same list shared.
 */
import type { CatalogKind } from './catalog-backend.js';

type Items = Record<string, unknown>[];

export class ListCache {
  readonly #ttlMs: number;
  readonly #fetch: (kind: CatalogKind) => Promise<Items>;
  readonly #lists = new Map<CatalogKind, { items: Items; fetchedAt: number }>();
  readonly #pending = new Map<CatalogKind, Promise<Items>>();

  constructor(ttlMs: number, fetch: (kind: CatalogKind) => Promise<Items>) {
    this.#ttlMs = Math.max(ttlMs, 1_000);
    this.#fetch = fetch;
  }

  get(kind: CatalogKind, fresh = false): Promise<Items> {
    const cached = this.#lists.get(kind);
    if (!fresh && cached && Date.now() - cached.fetchedAt < this.#ttlMs) return Promise.resolve(cached.items);
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
