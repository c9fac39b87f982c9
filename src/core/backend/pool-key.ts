/**
 * The key a call's session is pooled under, encoded and decoded here only: the caller's input
 * capability set (the session's `initialize` declared exactly it), its principal unless the server is
 * configured `"isolation": "shared"`, and whether the call multiplexes (a caller that can be asked
 * nothing and wants no logs: nothing the backend sends needs routing to it, so its calls share one
 * session even where sessions are otherwise exclusive). The pool sees an opaque string; it learns a
 * key's share group and capabilities through `poolGroupOf` and `decodePoolKey`.
 */
import { capabilityKey, type InputCapabilities } from '../input-capabilities.js';

export interface PoolKey {
  readonly caps: InputCapabilities;
  /** Whose sessions these are; undefined when the server shares sessions across principals. */
  readonly principal?: string | undefined;
  readonly multiplex: boolean;
}

/** What of a call decides its pool key. */
export interface PooledCall {
  readonly caps: InputCapabilities;
  readonly principal: string;
  readonly logLevel?: string | undefined;
}

const EMPTY_CAPS_KEY = capabilityKey({});

/** The pool key of `call` on a server of the given isolation. */
export function poolKeyOf(call: PooledCall, isolation: 'principal' | 'shared'): PoolKey {
  // Progress is routed by token, so a caller with no input capability and no log level gets nothing
  // from the backend that needs routing to it.
  const multiplex = capabilityKey(call.caps) === EMPTY_CAPS_KEY && call.logLevel === undefined;
  return { caps: call.caps, principal: isolation === 'shared' ? undefined : call.principal, multiplex };
}

/**
 * The key as the pool holds it: canonical JSON, so equal keys are equal strings. Made on every call:
 * written out in canonical order (caps, multiplex, principal) around the capability key.
 */
export function encodePoolKey(key: PoolKey): string {
  const principal = key.principal === undefined ? '' : `,"principal":${JSON.stringify(key.principal)}`;
  return `{"caps":${capabilityKey(key.caps)},"multiplex":${key.multiplex}${principal}}`;
}

/** The key `encodePoolKey` made. Throws on a string it did not make. */
export function decodePoolKey(text: string): PoolKey {
  const value = JSON.parse(text) as { caps?: unknown; principal?: unknown; multiplex?: unknown };
  const { caps, principal, multiplex } = value;
  if (typeof caps !== 'object' || caps === null || typeof multiplex !== 'boolean' || (principal !== undefined && typeof principal !== 'string')) {
    throw new TypeError(`not a pool key: ${text}`);
  }
  return { caps: caps as InputCapabilities, principal, multiplex };
}

/**
 * Whose share a key counts against: its principal; on a server that shares sessions across
 * principals (no per-principal share is configured there), its capability set.
 */
export function poolGroupOf(text: string): string {
  const key = decodePoolKey(text);
  return key.principal ?? capabilityKey(key.caps);
}
