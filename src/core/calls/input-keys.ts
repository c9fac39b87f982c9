/**
 * Keys of `inputRequests`: unique within a call, stable across rounds, never reused.
 *
 * A legacy backend cannot name the key on the 2025-11-25 wire, so it may suggest one in its request's
 * `params._meta[INPUT_KEY_META]` (the conformance fixtures need e.g. `user_name`). Otherwise the gateway
 * mints `<kind>_<n>`, numbered per kind (`elicitation_1`, `sampling_1`, `elicitation_2`).
 */

/** `_meta` key a backend may set on elicitation/sampling/roots requests to name the input key. */
export const INPUT_KEY_META = 'io.github.mcp-mrtr-gateway/inputKey';

const KEY_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

const kindOf: Record<string, string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/** Hands out keys for one call. */
export class InputKeyMinter {
  // An array and a plain object rather than a Set and a Map: a call has a few keys, and a parked call
  // holds its minter (issue 30).
  #used: readonly string[] = [];
  readonly #counters: Record<string, number> = {};

  /** A fresh key for `method`, preferring the backend's `hint` when it is valid and unused. */
  next(method: string, hint: unknown): string {
    if (typeof hint === 'string' && KEY_PATTERN.test(hint)) {
      let key = hint;
      for (let n = 2; this.#used.includes(key); n++) key = `${hint}_${n}`;
      this.#used = this.#used.concat(key);
      return key;
    }
    const kind = kindOf[method] ?? 'input';
    let key: string;
    do {
      const n = (this.#counters[kind] ?? 0) + 1;
      this.#counters[kind] = n;
      key = `${kind}_${n}`;
    } while (this.#used.includes(key));
    this.#used = this.#used.concat(key);
    return key;
  }
}
