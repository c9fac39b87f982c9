import { describe, expect, it } from 'vitest';
import { MAX_ROUNDS, fulfil, type FulfilDeps } from '../../../src/fronts/legacy/fulfil.js';
import { inputCapabilitiesOf } from '../../../src/core/input-capabilities.js';

const elicit = { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: {} } } };
const inputRequired = (state: string) => ({ resultType: 'input_required', inputRequests: { name: elicit }, requestState: state });

function deps(over: Partial<FulfilDeps>): FulfilDeps {
  return {
    method: 'tools/call',
    round: async () => ({ content: [] }),
    send: async () => ({ action: 'accept', content: { name: 'Ada' } }),
    caps: inputCapabilitiesOf({ elicitation: {} }),
    signal: new AbortController().signal,
    ...over,
  };
}

describe('fulfil (legacy route input rounds, over a stateless backend round: nothing parked)', () => {
  it('retries with the answers and the requestState until the request completes', async () => {
    const seen: Record<string, unknown>[] = [];
    const result = await fulfil(
      { name: 't' },
      deps({
        round: async (params) => {
          seen.push(params);
          return seen.length === 1 ? inputRequired('s1') : { content: [{ type: 'text', text: 'done' }] };
        },
      }),
    );
    expect(result).toEqual({ content: [{ type: 'text', text: 'done' }] });
    expect(seen[1]).toEqual({ name: 't', inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } }, requestState: 's1' });
  });

  it('fails a tools/call with isError, and throws for others, when the client answers with an error', async () => {
    const send = async () => Promise.reject(Object.assign(new Error('MCP error -32600: closed'), { code: -32600 }));
    const tool = await fulfil({}, deps({ round: async () => inputRequired('s'), send }));
    expect(tool).toMatchObject({ isError: true });
    expect(JSON.stringify(tool)).toContain('closed');
    await expect(fulfil({}, deps({ method: 'prompts/get', round: async () => inputRequired('s'), send }))).rejects.toMatchObject({ code: -32603 });
  });

  it('refuses to ask a client for what it did not declare', async () => {
    let sent = 0;
    const result = await fulfil({}, deps({ caps: inputCapabilitiesOf({}), round: async () => inputRequired('s'), send: async () => ({ x: sent++ }) }));
    expect(result).toMatchObject({ isError: true });
    expect(sent).toBe(0);
  });

  it(`gives up after ${MAX_ROUNDS} rounds`, async () => {
    let rounds = 0;
    const result = await fulfil({}, deps({ round: async () => (rounds++, inputRequired(`s${rounds}`)) }));
    expect(result).toMatchObject({ isError: true });
    expect(rounds).toBe(MAX_ROUNDS + 1);
  });

  it("rejects with the request's own abort, without another round", async () => {
    const ac = new AbortController();
    let rounds = 0;
    const pending = fulfil(
      {},
      deps({
        signal: ac.signal,
        round: async () => (rounds++, inputRequired('s')),
        send: (_m, _p, signal) =>
          new Promise((_r, reject) => {
            signal.addEventListener('abort', () => reject(signal.reason));
            ac.abort(new Error('client went away')); // while the client is being asked
          }),
      }),
    );
    await expect(pending).rejects.toThrow('client went away');
    expect(rounds).toBe(1);
  });
});
