/**
 * What each backend operation (a backend's tool, prompt or resource) has been seen to do when it asks
 * for input: whether a call of it ever made an input request while another of its requests was still
 * outstanding. Such requests are made together (a `Promise.all` of an elicitation and a sampling
 * request), and an MRTR round should carry them together; an operation that asks one thing at a time
 * (or once) has nothing to wait for after its request. The rounds read it to choose their quiet gap
 * for backends whose activity cannot be seen (fronts/mrtr/round-waiter.ts).
 *
 * An operation is what the gateway names, never what a caller writes (`operationOf`): a tool's or
 * prompt's name as its backend's last known list holds it (a name no list holds is not learned), a
 * resource template (a resource read by URI alone is learned under its backend's `resources/read`,
 * never under the URI, which may carry a caller's data and has no length bound).
 * Learned per instance from the calls it serves and bounded: past `max` operations, the one that asked
 * together longest ago is forgotten (learned again the next time it asks together). Never unlearned
 * otherwise: an operation that once asked together keeps the longer gap. Shared by every principal:
 * what it holds is how an operation asks, a property of the backend's tool, not of any call; a caller
 * who makes a tool look as if it asks together costs the others at most the longer gap.
 */
import type { BackendPort } from '../backend/port.js';
import type { InputCapabilities } from '../input-capabilities.js';
import { itemNamed } from '../named-item.js';

export class AskPatterns {
  readonly #together = new Set<string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  /** Whether the operation `key` names (`askKey`) has been seen asking for input together. */
  together(key: string): boolean {
    return this.#together.has(key);
  }

  /**
   * A call of the operation `key` names made an input request while another of its requests was
   * outstanding. Known already, it moves to the newest end: what is forgotten first is what asked
   * together longest ago.
   */
  noteTogether(key: string): void {
    if (!this.#together.delete(key) && this.#together.size >= this.#max) this.#together.delete(this.#together.values().next().value!);
    this.#together.add(key);
  }

  /** How many operations are known to ask together. */
  get size(): number {
    return this.#together.size;
  }
}

/** The key of `operation` of `backend`, by `method`. */
export const askKey = (backend: string, method: string, operation: string): string => `${backend}\u0000${method}\u0000${operation}`;

/** What a call of `method` on `route` is learned under: see the header; undefined: nothing. */
export function operationOf(
  route: { readonly backend: Pick<BackendPort, 'cachedList'>; readonly name: string; readonly template?: string | undefined },
  method: string,
  caps: InputCapabilities,
): string | undefined {
  if (method === 'resources/read') return route.template ?? '';
  const items = route.backend.cachedList(method === 'tools/call' ? 'tools' : 'prompts', caps);
  return items && itemNamed(items, route.name) ? route.name : undefined;
}
