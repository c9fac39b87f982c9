/**
 * What each backend operation (a backend's tool, prompt or resource) has been seen to do when it asks
 * for input: whether a call of it ever made an input request while another of its requests was still
 * outstanding. Such requests are made together (a `Promise.all` of an elicitation and a sampling
 * request), and an MRTR round should carry them together; an operation that asks one thing at a time
 * (or once) has nothing to wait for after its request. And how many it asks together: a round of a
 * call that has had fewer requests unanswered at once in its wave (a run of requests each made while
 * another was unanswered) than that operation's calls had in the same wave before waits for the rest,
 * up to its bound (`coalesceMs`), whatever the load; then, or for a wave not known, the rounds choose a
 * quiet gap, for backends whose activity cannot be seen by whether the operation asks together
 * (fronts/mrtr/round-waiter.ts).
 *
 * An operation is what the gateway names, never what a caller writes (`operationOf`): a tool's or
 * prompt's name as its backend's last known list holds it (a name no list holds is not learned), a
 * resource template (a resource read by URI alone is learned under its backend's `resources/read`,
 * never under the URI, which may carry a caller's data and has no length bound).
 * Learned per instance from the calls it serves and bounded: past `max` operations, the one that asked
 * together longest ago is forgotten (learned again the next time it asks together). Never unlearned
 * otherwise: an operation that once asked together keeps the longer gap; a wave's count is lowered when
 * a round waited out its bound without it (`noteFewer`). Shared by every principal: what it holds is how
 * an operation asks, a property of the backend's tool, not of any call; a caller who makes a tool look
 * as if it asks more together costs the others the longer gap, or one round's bound, at most.
 *
 * And the other way (issue 30): an operation whose rounds went out ALONE_AFTER times with one request,
 * each time once its backend was seen quiet (a stdio process asleep in every thread, in /proc), and
 * never together, asks one thing at a time: its rounds look at each backend process's main thread
 * only (Call.backendActivity), one read a process where a whole look reads one a thread (about an
 * eighth of the gateway's CPU in a round). What that misses is a request written together with the
 * last while the main thread waits on another of its own (a garbage collector's helpers, a writer
 * thread): it goes out in a round of its own, and the operation asks together from then on when it
 * came before the first was answered. Bounded as the rest: past `max`, the one first noted longest ago
 * is forgotten.
 */
import type { BackendPort } from '../backend/port.js';
import type { InputCapabilities } from '../input-capabilities.js';
import { itemNamed } from '../named-item.js';

/** How many waves of an operation's calls are learned (a wave past these is not: the round takes its gap). */
const MAX_WAVES = 16;
/** How many rounds of one request each, with its backend seen quiet, make an operation one that asks alone. */
export const ALONE_AFTER = 8;

export class AskPatterns {
  /** Per operation seen asking together: how many requests each wave of its calls held at most (index 0: the first wave). */
  readonly #together = new Map<string, number[]>();
  /** Per operation not seen asking together: how many of its rounds went out alone with its backend seen quiet. */
  readonly #alone = new Map<string, number>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  /** Whether the operation `key` names (`askKey`) has been seen asking for input together. */
  together(key: string): boolean {
    return this.#together.has(key);
  }

  /** Whether the operation `key` names asks one thing at a time: ALONE_AFTER rounds went out alone, none together. */
  alone(key: string): boolean {
    return (this.#alone.get(key) ?? 0) >= ALONE_AFTER;
  }

  /**
   * A round of a call of the operation `key` names went out with one request, its backend seen quiet
   * (not: the quiet was not seen, the backend's activity not in view, or the call was told what to
   * answer in advance). Counted until it asks alone; an operation known to ask together is not.
   */
  noteAlone(key: string): void {
    if (this.#together.has(key)) return;
    const seen = this.#alone.get(key);
    if (seen !== undefined && seen >= ALONE_AFTER) return;
    if (!this.#alone.delete(key) && this.#alone.size >= this.#max) this.#alone.delete(this.#alone.keys().next().value!);
    this.#alone.set(key, (seen ?? 0) + 1);
  }

  /**
   * How many requests the `wave`-th wave of a call of `key` is expected to hold: the most one held,
   * unless a later one held fewer (`noteFewer`); 0 when not known (the operation never asked together
   * in that wave).
   */
  expected(key: string, wave: number): number {
    return this.#together.get(key)?.[wave] ?? 0;
  }

  /**
   * A call of the operation `key` names made an input request while another of its requests was
   * outstanding: in its `wave`-th wave (a run of requests each made while another was unanswered)
   * `count` were unanswered at once (undefined `wave`: not counted, only that it asks together). Known
   * already, the operation moves to the newest end: what is forgotten first is what asked together
   * longest ago.
   */
  noteTogether(key: string, wave: number | undefined, count: number): void {
    this.#alone.delete(key);
    const counts = this.#together.get(key) ?? [];
    if (!this.#together.delete(key) && this.#together.size >= this.#max) this.#together.delete(this.#together.keys().next().value!);
    this.#together.set(key, counts);
    if (wave === undefined || wave >= MAX_WAVES) return;
    while (counts.length <= wave) counts.push(0);
    counts[wave] = Math.max(counts[wave]!, count);
  }

  /**
   * A round of the `wave`-th wave went out at its bound (`coalesceMs`) with `count` requests, fewer than
   * expected: the operation does not always ask as many. That wave expects `count` until a call has
   * more at once again; below two, nothing (not known: the round takes the gap of an operation that asks
   * together, not the short one).
   */
  noteFewer(key: string, wave: number, count: number): void {
    const counts = this.#together.get(key);
    if (counts && (counts[wave] ?? 0) > count) counts[wave] = count >= 2 ? count : 0;
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
