import { describe, expect, it } from 'vitest';
import { capabilityKey, inputCapabilitiesOf, missingCapabilityFor } from '../../src/core/input-capabilities.js';

describe('capabilities', () => {
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
