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
 * And operations that ask once (issue 30): one whose calls' first rounds went out ONCE_AFTER times with
 * one request, each time once its backend was seen quiet in every thread (a stdio process asleep, in
 * /proc), and none of whose calls ever asked a second thing, has its rounds look at each backend
 * process's main thread only (Call.backendActivity: one read a process, where a whole look reads one a
 * thread, about an eighth of the gateway's CPU in a round). What that can miss is a second request
 * written after work off the main thread (a worker, a child process, a garbage collection's helpers):
 * that call's round goes out without it, and the second request itself makes the operation one that
 * asks again (`noteAgain`), looked at whole from then on, however late it came. So a caller who makes
 * a tool look as if it asks once costs the others one round more, once. Bounded as the rest: past
 * `max`, the operation noted longest ago is forgotten.
 */
import type { BackendPort } from '../backend/port.js';
import type { InputCapabilities } from '../input-capabilities.js';
import { itemNamed } from '../named-item.js';

/** How many waves of an operation's calls are learned (a wave past these is not: the round takes its gap). */
const MAX_WAVES = 16;
/** How many first rounds of one request each, with its backend seen quiet, make an operation one that asks once. */
export const ONCE_AFTER = 8;
/** In `#once`: an operation one of whose calls asked a second thing (it never asks once). */
const AGAIN = -1;

export class AskPatterns {
  /** Per operation seen asking together: how many requests each wave of its calls held at most (index 0: the first wave). */
  readonly #together = new Map<string, number[]>();
  /** Per operation: how many of its calls' first rounds went out with one request, its backend seen quiet; AGAIN once one asked again. */
  readonly #once = new Map<string, number>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  /** Whether the operation `key` names (`askKey`) has been seen asking for input together. */
  together(key: string): boolean {
    return this.#together.has(key);
  }

  /** Whether the operation `key` names asks once: ONCE_AFTER first rounds went out alone, its backend seen quiet, and no call asked again. */
  once(key: string): boolean {
    return (this.#once.get(key) ?? 0) >= ONCE_AFTER;
  }

  /**
   * The first round of a call of the operation `key` names went out with its one request, its backend
   * seen quiet in every thread. Counted up to ONCE_AFTER; not for an operation known to ask again.
   */
  noteOnce(key: string): void {
    const seen = this.#once.get(key);
    if (seen === AGAIN || (seen ?? 0) >= ONCE_AFTER) return;
    setNewest(this.#once, key, (seen ?? 0) + 1, this.#max);
  }

  /** A call of the operation `key` names asked a second thing (together with its first, or after it): it never asks once. */
  noteAgain(key: string): void {
    if (this.#once.get(key) !== AGAIN) setNewest(this.#once, key, AGAIN, this.#max);
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
    const counts = this.#together.get(key) ?? [];
    setNewest(this.#together, key, counts, this.#max);
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

/** Sets `key` in `map` as its newest entry; past `max` entries, the oldest is forgotten. */
function setNewest<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  if (!map.delete(key) && map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
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
