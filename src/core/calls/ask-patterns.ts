/**
 * What each backend operation (a backend's tool, prompt or resource) has been seen to do when it asks
 * for input: whether a call of it ever made an input request while another of its requests was still
 * outstanding. Such requests are made together (a `Promise.all` of an elicitation and a sampling
 * request), and an MRTR round should carry them together; an operation that asks one thing at a time
 * (or once) has nothing to wait for after its request. The rounds read it to choose their quiet gap
 * for backends whose activity cannot be seen (fronts/mrtr/round-waiter.ts).
 *
 * Learned per instance from the calls it serves, never from a caller's say, and bounded: past `max`
 * operations, the oldest learned is forgotten (it is learned again the next time it asks together).
 * What it holds says nothing about any caller's data, only how an operation asks.
 */
export class AskPatterns {
  readonly #together = new Set<string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  /** Whether `operation` of `backend` (by `method`) has been seen asking for input together. */
  together(backend: string, method: string, operation: string): boolean {
    return this.#together.has(keyOf(backend, method, operation));
  }

  /** A call of `operation` made an input request while another of its requests was outstanding. */
  noteTogether(backend: string, method: string, operation: string): void {
    const key = keyOf(backend, method, operation);
    if (this.#together.has(key)) return;
    if (this.#together.size >= this.#max) this.#together.delete(this.#together.values().next().value!);
    this.#together.add(key);
  }

  /** How many operations are known to ask together. */
  get size(): number {
    return this.#together.size;
  }
}

/** The operation a call's params name: a tool's or prompt's `name`, a resource's `uri`; '' for none. */
export function operationOf(params: Record<string, unknown>): string {
  const named = params['name'] ?? params['uri'];
  return typeof named === 'string' ? named : '';
}

const keyOf = (backend: string, method: string, operation: string): string => `${backend}\u0000${method}\u0000${operation}`;
