/**
 * What the catalog and the front need from any backend, whatever era it speaks.
 */
export type CatalogKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

export interface CatalogBackend {
  readonly name: string;
  /** 'legacy': sessions, mid-call requests translated to MRTR; 'modern': 2026-07-28, passed through. */
  readonly era: 'legacy' | 'modern';
  /** True when the backend is reachable. */
  readonly up: boolean;
  /** Connects (or starts connecting in the background). Never throws. */
  start(): Promise<void>;
  /** The backend's server capabilities, or undefined when it is unreachable. */
  capabilities(): Promise<Record<string, unknown> | undefined>;
  /** A backend list (all pages), cached. */
  list(kind: CatalogKind, opts?: { fresh?: boolean }): Promise<Record<string, unknown>[]>;
  /** The last fetched list, without I/O. */
  cachedList(kind: CatalogKind): Record<string, unknown>[] | undefined;
  /** A request that needs no input (completion/complete). */
  requestOnPrimary(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export const LIST_METHODS: Record<CatalogKind, { method: string; field: string; capability: 'tools' | 'prompts' | 'resources' }> = {
  tools: { method: 'tools/list', field: 'tools', capability: 'tools' },
  prompts: { method: 'prompts/list', field: 'prompts', capability: 'prompts' },
  resources: { method: 'resources/list', field: 'resources', capability: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', field: 'resourceTemplates', capability: 'resources' },
};

export const MAX_LIST_PAGES = 64;

/** Fetches every page of a list with `request`. */
export async function fetchAllPages(
  kind: CatalogKind,
  request: (method: string, params: Record<string, unknown> | undefined) => Promise<Record<string, unknown>>,
): Promise<Record<string, unknown>[]> {
  const spec = LIST_METHODS[kind];
  const items: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const res = await request(spec.method, cursor ? { cursor } : undefined);
    const pageItems = res[spec.field];
    if (Array.isArray(pageItems)) items.push(...(pageItems as Record<string, unknown>[]));
    cursor = typeof res['nextCursor'] === 'string' && res['nextCursor'] ? res['nextCursor'] : undefined;
    if (!cursor) break;
  }
  return items;
}
