import { describe, expect, it } from 'vitest';
import { capabilityKey, inputCapabilitiesOf, missingCapabilityFor } from '../../src/core/input-capabilities.js';
import { canonicalJson } from '../../src/util/canonical-json.js';

describe('capabilities', () => {
  it('keys every set as its canonical JSON, whatever its shape', () => {
    const subsets = <T extends string>(names: readonly T[]): Record<string, object>[] =>
      names.reduce<Record<string, object>[]>((acc, n) => [...acc, ...acc.map((o) => ({ ...o, [n]: {} }))], [{}]);
    const sets: Record<string, unknown>[] = [];
    for (const e of [undefined, ...subsets(['url', 'form'] as const)]) {
      for (const s of [undefined, ...subsets(['tools', 'context'] as const)]) {
        for (const r of [undefined, {}]) sets.push({ sampling: s, roots: r, elicitation: e });
      }
    }
    // Not the shape inputCapabilitiesOf makes: the general way, the same answer.
    sets.push({ roots: { listChanged: true } }, { experimental: {} }, { elicitation: { form: { x: 1 } } }, { sampling: 'yes' }, { roots: null });
    for (const caps of sets) {
      const defined = Object.fromEntries(Object.entries(caps).filter(([, v]) => v !== undefined));
      expect(capabilityKey(defined)).toBe(canonicalJson(defined));
      expect(capabilityKey(defined)).toBe(canonicalJson(defined)); // and again, from the table
    }
  });

  it('normalises equivalent declarations to one pool key', () => {
    expect(capabilityKey(inputCapabilitiesOf({ elicitation: {} }))).toBe(capabilityKey(inputCapabilitiesOf({ elicitation: { form: {} } })));
    expect(capabilityKey(inputCapabilitiesOf({ roots: { listChanged: true }, experimental: { x: {} } }))).toBe(capabilityKey({ roots: {} }));
    expect(capabilityKey(inputCapabilitiesOf({ sampling: {} }))).not.toBe(capabilityKey(inputCapabilitiesOf({ sampling: { tools: {} } })));
    expect(inputCapabilitiesOf({ elicitation: { url: {} } })).toEqual({ elicitation: { url: {} } });
    expect(inputCapabilitiesOf('junk')).toEqual({});
  });

  it('names what an input request needs (the -32021 data)', () => {
    expect(missingCapabilityFor('elicitation/create', { message: 'x' }, {})).toEqual({ elicitation: {} });
    expect(missingCapabilityFor('elicitation/create', { mode: 'url', url: 'https://x' }, { elicitation: { form: {} } })).toEqual({ elicitation: { url: {} } });
    expect(missingCapabilityFor('elicitation/create', { message: 'x' }, { elicitation: { form: {} } })).toBeUndefined();
    expect(missingCapabilityFor('sampling/createMessage', {}, {})).toEqual({ sampling: {} });
    expect(missingCapabilityFor('sampling/createMessage', { tools: [] }, { sampling: {} })).toEqual({ sampling: { tools: {} } });
    expect(missingCapabilityFor('roots/list', {}, { roots: {} })).toBeUndefined();
    expect(missingCapabilityFor('roots/list', {}, {})).toEqual({ roots: {} });
  });
});
