/**
 * Ids for calls and instances: ULIDs (sortable by time, 26 characters) whose 80 random bits come from
 * the operating system's CSPRNG. The `ulid` package asks `crypto.getRandomValues` once per character
 * (16 calls per id; about 3% of the gateway's CPU on pass-through calls in a profile); here the
 * randomness is drawn from a pooled buffer refilled 4 KiB at a time (Web Crypto's getRandomValues:
 * the same CSPRNG on Node and at the edge). Each character takes one byte: 256 is a multiple of the
 * 32-letter alphabet, so every letter stays equally likely.
 */
import { monotonicFactory, ulid } from 'ulid';

const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let next = POOL_BYTES;

/** A uniform draw in [0, 1) with 8 bits of entropy: enough for one base-32 character. */
function pooledPrng(): number {
  if (next === POOL_BYTES) {
    crypto.getRandomValues(pool);
    next = 0;
  }
  return pool[next++]! / 256;
}

/** A new ULID (time now, random part from the pooled CSPRNG). */
export function newId(): string {
  return ulid(undefined, pooledPrng);
}

/**
 * A source of ULIDs that sort in the order they were made, even within one millisecond (the `ulid`
 * monotonic factory: the random part is incremented), for logs whose readers resume after an id.
 */
export function monotonicIds(): () => string {
  const make = monotonicFactory(pooledPrng);
  return () => make();
}
