/**
 * A delegating key in front of a cluster (an edge in front of clustered cores): the caller it names
 * (`Mcp-Gateway-Principal`) travels with a forwarded request and is signed with it, so a retry that
 * lands on the instance that does not hold its call runs for the same principal as the call, and a
 * retry naming another caller is refused as it is on the owner.
 */
import { describe, expect, it } from 'vitest';
import { twoInstances } from '../helpers/cluster.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const KEY = 'edge-key-0123456789abcdef';
const instances = twoInstances({ apiKeys: [{ principal: 'edge', key: KEY, delegates: true }] });

const as = (caller: string) => ({ authorization: `Bearer ${KEY}`, 'mcp-gateway-principal': caller });

describe('a delegating key on a cluster', () => {
  it("forwards the caller it names: a retry on the other instance runs as that caller, another caller's is refused", async () => {
    const { a, b } = instances;
    const first = await post(a.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT, headers: as('alice') });
    const ir = first.message['result'] as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(ir.resultType).toBe('input_required');
    const key = Object.keys(ir.inputRequests)[0]!;
    const retry = { name: 'elicit_name', inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: ir.requestState };

    const bob = await post(b.url, 'tools/call', retry, { caps: ELICIT, headers: as('bob') });
    expect(bob.message['error']).toMatchObject({ code: -32602, data: { reason: 'request_state_principal' } });

    const alice = await post(b.url, 'tools/call', retry, { caps: ELICIT, headers: as('alice') });
    expect(alice.message['error']).toBeUndefined();
    expect(JSON.stringify(alice.message['result'])).toContain('Ada');
  });
});
