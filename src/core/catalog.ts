/**
 * Aggregation across backends and routing by name.
 *
 * Naming rule (documented in README.md): with one backend every name passes through unchanged. With
 * several, tools and prompts are exposed as `<server><sep><name>` (sep defaults to `__`), servers in
 * configuration order and items in each backend's own order, so every listing is deterministic. A
 * backend marked `unprefixed` (the gateway's own proxy tools) keeps its names as they are.
 * Lists and routes follow the caller's input capability set (a backend may show a tool only to
 * clients that declared elicitation, say), and a front may narrow a list further per item (a tool
 * that needs a task is not listed to a caller that takes none). Resource URIs are never rewritten: `resources/read` goes to the backend that lists the URI, else the
 * one with a matching template, else the first backend that serves resources.
 */
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import { uriForms } from './access-policy.js';
import type { Logger } from '../log.js';
import type { BackendPort, CatalogKind } from './backend/port.js';
import type { InputCapabilities } from './input-capabilities.js';
import { itemNamed } from './named-item.js';

export interface Route {
  readonly backend: BackendPort;
  /** The name (or URI) as the backend knows it. */
  readonly name: string;
  /** For a resource URI no list names: the backend's template it matched. */
  readonly template?: string | undefined;
}

type NamedKind = 'tools' | 'prompts';

/** How one caller sees one backend's list item: the item (changed or not), or undefined when it is not shown to it. */
export type ItemView = (backend: BackendPort, item: Record<string, unknown>) => Record<string, unknown> | undefined;

export class Catalog {
  readonly #backends: readonly BackendPort[];
  /** The backends whose names follow the naming rule (all but the gateway's own). */
  readonly #named: readonly BackendPort[];
  readonly #sep: string;
  readonly #log: Logger;

  constructor(backends: readonly BackendPort[], separator: string, logger: Logger) {
    this.#backends = backends;
    this.#named = backends.filter((b) => !b.unprefixed);
    this.#sep = separator;
    this.#log = logger;
  }

  get backends(): readonly BackendPort[] {
    return this.#backends;
  }

  /** A catalog of `backend` alone (its names unprefixed): what a session core serves at `<path>/<name>`. */
  alone(backend: BackendPort): Catalog {
    return new Catalog([backend], this.#sep, this.#log);
  }

  /** The exposed name of a backend's tool or prompt. */
  exposedName(backend: BackendPort, name: string): string {
    return this.#named.length <= 1 || backend.unprefixed ? name : `${backend.name}${this.#sep}${name}`;
  }

  /**
   * The aggregated list of `kind` as a caller with input capabilities `caps` sees it, renamed per the
   * naming rule. Backends that fail are skipped. `view`, when given, sees each item first (with the
   * backend's own name) and answers it as the caller sees it, or undefined to leave it out.
   */
  async list(kind: CatalogKind, caps: InputCapabilities = {}, view?: ItemView): Promise<Record<string, unknown>[]> {
    const lists = await Promise.all(
      this.#backends.map(async (b) => {
        try {
          return await b.list(kind, { caps });
        } catch (e) {
          const cached = b.cachedList(kind, caps);
          this.#log.warn(
            { backend: b.name, kind, err: (e as Error).message },
            cached ? 'backend list failed; answered with its last known list' : 'backend list failed; answered without it',
          );
          return cached ?? [];
        }
      }),
    );
    const out: Record<string, unknown>[] = [];
    lists.forEach((items, i) => {
      const backend = this.#backends[i]!;
      for (const listed of items) {
        const item = view ? view(backend, listed) : listed;
        if (!item) continue;
        if ((kind === 'tools' || kind === 'prompts') && typeof item['name'] === 'string') {
          out.push({ ...item, name: this.exposedName(backend, item['name']) });
        } else out.push(item);
      }
    });
    return out;
  }

  /**
   * What `resolve` answers when its first candidate's last known list names the tool or prompt (no
   * I/O, no promise: most calls); undefined when `resolve` must be asked (it may list again, or go on
   * to the next candidate).
   */
  resolveKnown(kind: NamedKind, exposed: string, caps: InputCapabilities = {}): Route | undefined {
    const first = this.#candidates(exposed)[0];
    const known = first && first.backend.cachedList(kind, caps);
    return known && itemNamed(known, first.name) ? first : undefined;
  }

  /** Where an exposed name may lead, in the order `resolve` tries them: unprefixed backends, then the one named backend or the one whose prefix the name carries. */
  #candidates(exposed: string): Route[] {
    const candidates: Route[] = [];
    for (const backend of this.#backends) if (backend.unprefixed) candidates.push({ backend, name: exposed });
    if (this.#named.length === 1) candidates.push({ backend: this.#named[0]!, name: exposed });
    else {
      for (const backend of this.#named) {
        const prefix = `${backend.name}${this.#sep}`;
        if (exposed.startsWith(prefix) && exposed.length > prefix.length) candidates.push({ backend, name: exposed.slice(prefix.length) });
      }
    }
    return candidates;
  }

  /** The backend and backend-side name for an exposed tool or prompt name, or undefined. */
  async resolve(kind: NamedKind, exposed: string, caps: InputCapabilities = {}): Promise<Route | undefined> {
    for (const route of this.#candidates(exposed)) {
      if (await this.#has(route.backend, kind, route.name, caps)) return route;
    }
    return undefined;
  }

  /** True when a backend's list, as a client that declared `caps` sees it, names `exposed` (a backend that cannot list names nothing here). */
  async lists(kind: NamedKind, exposed: string, caps: InputCapabilities): Promise<boolean> {
    for (const route of this.#candidates(exposed)) {
      const items = await this.#safeList(route.backend, kind, caps);
      if (items && itemNamed(items, route.name)) return true;
    }
    return false;
  }

  /** The backend that serves `uri`. */
  async resolveResource(uri: string, caps: InputCapabilities = {}): Promise<Route | undefined> {
    const lists = await Promise.all(this.#backends.map((b) => this.#safeList(b, 'resources', caps)));
    for (const [i, items] of lists.entries()) {
      if (items?.some((r) => r['uri'] === uri)) return { backend: this.#backends[i]!, name: uri };
    }
    const templates = await Promise.all(this.#backends.map((b) => this.#safeList(b, 'resourceTemplates', caps)));
    for (const [i, items] of templates.entries()) {
      for (const t of items ?? []) {
        const tpl = typeof t['uriTemplate'] === 'string' ? compiledTemplate(t['uriTemplate']) : undefined;
        if (tpl?.match(uri)) return { backend: this.#backends[i]!, name: uri, template: t['uriTemplate'] as string };
      }
    }
    if (this.#named.length === 1) return { backend: this.#named[0]!, name: uri };
    // The gateway's own resources are all listed: an unknown URI is never theirs.
    const fallback = this.#backends.find((b, i) => !b.unprefixed && ((lists[i]?.length ?? 0) > 0 || (templates[i]?.length ?? 0) > 0));
    return fallback ? { backend: fallback, name: uri } : undefined;
  }

  /** The backend that owns a resource template (for completion/complete `ref/resource`). */
  async resolveTemplate(uriTemplate: string, caps: InputCapabilities = {}): Promise<Route | undefined> {
    for (const b of this.#backends) {
      const items = await this.#safeList(b, 'resourceTemplates', caps);
      if (items?.some((t) => t['uriTemplate'] === uriTemplate)) return { backend: b, name: uriTemplate };
    }
    return this.#named.length === 1 ? { backend: this.#named[0]!, name: uriTemplate } : undefined;
  }

  /**
   * True when `backend` serves `name`. A backend that cannot list now (restarting, down, hung) keeps
   * its last known list: a name in it is still its own (the call then reports `backend_unavailable`),
   * and so is any name when it was never listed — never "Unknown tool" for a backend that is away.
   */
  async #has(backend: BackendPort, kind: NamedKind, name: string, caps: InputCapabilities): Promise<boolean> {
    // The last known list first, without I/O (a stale one too: a call must not wait for a slow list).
    const cached = backend.cachedList(kind, caps);
    if (cached && itemNamed(cached, name)) return true;
    for (const fresh of [false, true]) {
      const listed = await this.#tryList(backend, kind, caps, fresh);
      if (listed.ok && itemNamed(listed.items, name)) return true;
      if (!listed.ok) {
        const known = backend.cachedList(kind, caps);
        if (known) return itemNamed(known, name) !== undefined || (this.#named.length === 1 && !backend.unprefixed);
        return !backend.unprefixed;
      }
    }
    return false;
  }

  async #tryList(
    backend: BackendPort,
    kind: CatalogKind,
    caps: InputCapabilities,
    fresh: boolean,
  ): Promise<{ ok: true; items: Record<string, unknown>[] } | { ok: false }> {
    try {
      return { ok: true, items: await backend.list(kind, { fresh, caps }) };
    } catch {
      return { ok: false };
    }
  }

  async #safeList(backend: BackendPort, kind: CatalogKind, caps: InputCapabilities, fresh = false): Promise<Record<string, unknown>[] | undefined> {
    try {
      return await backend.list(kind, { fresh, caps });
    } catch {
      return backend.cachedList(kind, caps);
    }
  }
}

/**
 * The URI template of `templates` (a backend's `resourceTemplates` list) that `uri` matches, if any:
 * what a read of `uri` is checked against by the policy besides the URI itself.
 */
export function templateMatching(uri: string, templates: readonly Record<string, unknown>[]): string | undefined {
  // Every form the URI may be written in (`TEST://x` is `test://x`), as the policy reads URIs.
  for (const form of uriForms(uri)) {
    const matched = templateMatchingAsWritten(form, templates);
    if (matched !== undefined) return matched;
  }
  return undefined;
}

function templateMatchingAsWritten(uri: string, templates: readonly Record<string, unknown>[]): string | undefined {
  for (const t of templates) {
    const text = t['uriTemplate'];
    if (typeof text === 'string' && compiledTemplate(text)?.match(uri)) return text;
  }
  return undefined;
}

/** Backends' templates compiled once each (routing and the policy read them on every resource read); null: one the SDK cannot read. */
const compiled = new Map<string, UriTemplate | null>();

function compiledTemplate(text: string): UriTemplate | undefined {
  let t = compiled.get(text);
  if (t === undefined) {
    try {
      t = new UriTemplate(text);
    } catch {
      t = null;
    }
    compiled.set(text, t);
  }
  return t ?? undefined;
}
