/**
 * The client's input capabilities (elicitation, sampling, roots) across eras.
 *
 * A 2026-07-28 client declares capabilities per request (`_meta["io.modelcontextprotocol/clientCapabilities"]`);
 * a legacy backend learns them once at `initialize`. The backend session that serves a call must have
 * declared exactly the caller's input capabilities, so sessions are pooled by `capabilityKey`.
 * `requiredCapabilityFor` says what an input request needs (2026-07-28 basic/patterns/mrtr.mdx,
 * client/elicitation.mdx: a bare `elicitation: {}` means form mode).
 */
import { canonicalJson } from '../util/canonical-json.js';

/** The input-related subset of client capabilities, in the shape both eras share. */
export interface InputCapabilities {
  elicitation?: { form?: object; url?: object };
  sampling?: { context?: object; tools?: object };
  roots?: object;
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** Keeps only elicitation/sampling/roots and their known sub-keys, so equivalent sets pool together. */
export function inputCapabilitiesOf(declared: unknown): InputCapabilities {
  const caps = asObject(declared) ?? {};
  const out: InputCapabilities = {};
  const elicitation = asObject(caps['elicitation']);
  if (elicitation) {
    const e: { form?: object; url?: object } = {};
    const hasForm = asObject(elicitation['form']) !== undefined;
    const hasUrl = asObject(elicitation['url']) !== undefined;
    // `{}` means form only; `{url:{}}` alone means url only.
    if (hasForm || !hasUrl) e.form = {};
    if (hasUrl) e.url = {};
    out.elicitation = e;
  }
  const sampling = asObject(caps['sampling']);
  if (sampling) {
    const s: { context?: object; tools?: object } = {};
    if (asObject(sampling['context'])) s.context = {};
    if (asObject(sampling['tools'])) s.tools = {};
    out.sampling = s;
  }
  if (asObject(caps['roots'])) out.roots = {};
  return out;
}

/** The sub-keys of each input capability `inputCapabilitiesOf` keeps, in canonical (sorted) order. */
const SHAPE = [
  ['elicitation', ['form', 'url']],
  ['roots', []],
  ['sampling', ['context', 'tools']],
] as const;

/** Canonical keys by shape bits (`shapeBits`), made on first use. */
const keysByShape = new Map<number, string>();

/**
 * The set as bits (one per capability and per sub-key), when it has exactly the shape
 * `inputCapabilitiesOf` makes: known keys only, every value an empty object. Undefined otherwise.
 */
function shapeBits(caps: InputCapabilities): number | undefined {
  const record = caps as Record<string, unknown>;
  let bits = 0;
  let bit = 1;
  let seen = 0;
  for (const [name, subs] of SHAPE) {
    const value = asObject(record[name]);
    if (value !== undefined) {
      seen++;
      bits |= bit;
      let subSeen = 0;
      for (let i = 0; i < subs.length; i++) {
        const sub = value[subs[i]!];
        if (sub === undefined) continue;
        const inner = asObject(sub);
        if (inner === undefined || !isEmpty(inner)) return undefined;
        subSeen++;
        bits |= bit << (i + 1);
      }
      if (Object.keys(value).length !== subSeen) return undefined;
    } else if (record[name] !== undefined) return undefined;
    bit <<= subs.length + 1;
  }
  return Object.keys(record).length === seen ? bits : undefined;
}

function isEmpty(o: Record<string, unknown>): boolean {
  for (const key in o) if (Object.hasOwn(o, key)) return false;
  return true;
}

/**
 * A stable key for pooling backend sessions by declared capabilities: the set's canonical JSON. Asked
 * on every call, so the shapes `inputCapabilitiesOf` makes are looked up rather than serialised.
 */
export function capabilityKey(caps: InputCapabilities): string {
  const bits = shapeBits(caps);
  if (bits === undefined) return canonicalJson(caps);
  let key = keysByShape.get(bits);
  if (key === undefined) keysByShape.set(bits, (key = canonicalJson(caps)));
  return key;
}

/**
 * The capability an input request needs, or undefined when `caps` covers it.
 * The returned object is what goes into `-32021` `data.requiredCapabilities`.
 */
export function missingCapabilityFor(method: string, params: Record<string, unknown>, caps: InputCapabilities): Record<string, unknown> | undefined {
  switch (method) {
    case 'elicitation/create': {
      const url = params['mode'] === 'url';
      if (url) return caps.elicitation?.url ? undefined : { elicitation: { url: {} } };
      return caps.elicitation?.form ? undefined : { elicitation: {} };
    }
    case 'sampling/createMessage': {
      if (!caps.sampling) return { sampling: params['tools'] !== undefined ? { tools: {} } : {} };
      if (params['tools'] !== undefined && !caps.sampling.tools) return { sampling: { tools: {} } };
      return undefined;
    }
    case 'roots/list':
      return caps.roots ? undefined : { roots: {} };
    default:
      return undefined;
  }
}
