import { describe, expect, it } from 'vitest';
import { BackendRequestRefused, ClientRefusal } from '../../../src/core/backend/port.js';
import { SamplingGate, SamplingGates } from '../../../src/core/calls/sampling-gate.js';
import { createDeferred } from '../../../src/util/deferred.js';

const limits = { maxConcurrent: 2, timeoutMs: 60_000, failureThreshold: 3, openMs: 30_000 };
const never = new AbortController().signal;
const refused = () => Promise.reject(new ClientRefusal(-32600, 'no'));

describe('SamplingGate', () => {
  it('lets maxConcurrent requests out at once; the next waits for a slot', async () => {
    const gate = new SamplingGate(limits);
    const answers = [createDeferred<string>(), createDeferred<string>(), createDeferred<string>()];
    const started: number[] = [];
    const runs = answers.map((d, i) => gate.run(never, () => (started.push(i), d.promise)));
    const ticks = () => new Promise((r) => setImmediate(r));
    await ticks();
    expect(started).toEqual([0, 1]);
    answers[0]!.resolve('a');
    await runs[0];
    await ticks();
    expect(started).toEqual([0, 1, 2]);
    answers[1]!.resolve('b');
    answers[2]!.resolve('c');
    expect(await Promise.all(runs)).toEqual(['a', 'b', 'c']);
    expect(gate.idle).toBe(true);
  });

  it('opens after failureThreshold client failures in a row, refuses with -32000 while open, then lets one probe through', async () => {
    let now = 1_000;
    const gate = new SamplingGate(limits, () => now);
    for (let i = 0; i < 3; i++) await expect(gate.run(never, refused)).rejects.toBeInstanceOf(ClientRefusal);
    expect(gate.state).toBe('open');
    let sent = 0;
    await expect(gate.run(never, async () => (sent++, 'x'))).rejects.toMatchObject({ code: -32000, message: expect.stringMatching(/try again in 30 s/) });
    expect(sent).toBe(0);
    now += 30_000;
    expect(gate.state).toBe('half-open');
    const probe = createDeferred<string>();
    const probing = gate.run(never, () => probe.promise);
    await expect(gate.run(never, async () => 'y')).rejects.toMatchObject({ code: -32000 }); // one probe at a time
    probe.resolve('ok');
    expect(await probing).toBe('ok');
    expect(gate.state).toBe('closed');
  });

  it('opens again when the probe fails', async () => {
    let now = 0;
    const gate = new SamplingGate(limits, () => now);
    for (let i = 0; i < 3; i++) await gate.run(never, refused).catch(() => undefined);
    now += 30_000;
    await expect(gate.run(never, refused)).rejects.toBeInstanceOf(ClientRefusal);
    expect(gate.state).toBe('open');
  });

  it('fails a request the client does not answer within timeoutMs with -32001, which counts as a failure', async () => {
    const gate = new SamplingGate({ ...limits, timeoutMs: 20, failureThreshold: 1 });
    const run = gate.run(never, (signal) => new Promise((_r, reject) => signal.addEventListener('abort', () => reject(signal.reason))));
    await expect(run).rejects.toMatchObject({ code: -32001 });
    expect(gate.state).toBe('open');
  });

  it('does not count a request the backend withdrew, nor a refusal that is not the client’s', async () => {
    const gate = new SamplingGate({ ...limits, failureThreshold: 1 });
    const withdrawn = new AbortController();
    const run = gate.run(withdrawn.signal, (signal) => new Promise((_r, reject) => signal.addEventListener('abort', () => reject(signal.reason))));
    withdrawn.abort(new Error('withdrawn'));
    await expect(run).rejects.toThrow('withdrawn');
    await expect(gate.run(never, () => Promise.reject(new BackendRequestRefused(-32603, 'the call ended')))).rejects.toThrow('the call ended');
    expect(gate.state).toBe('closed');
  });
});

describe('SamplingGates', () => {
  it('keeps one gate per scope key, and forgets a gate once it is idle and closed', async () => {
    const gates = new SamplingGates({ ...limits, failureThreshold: 1 });
    const a = gates.gate('alice');
    expect(gates.gate('alice')).toBe(a);
    expect(gates.gate('bob')).not.toBe(a);
    await a.run(never, async () => 'ok');
    expect(gates.size).toBe(1); // alice's went when it became idle; bob's was never used
    await gates
      .gate('bob')
      .run(never, refused)
      .catch(() => undefined);
    expect(gates.gate('bob').state).toBe('open'); // an open breaker is kept
  });

  it('forgets a half-open breaker nobody tried for another openMs (its scope may be gone), and counts it no more', async () => {
    let now = 0;
    const gates = new SamplingGates({ ...limits, failureThreshold: 1, openMs: 1_000 }, () => now);
    await gates
      .gate('session')
      .run(never, refused)
      .catch(() => undefined);
    expect(gates.states()).toEqual({ closed: 0, open: 1, 'half-open': 0 });
    now = 1_500; // half-open: one probe may go
    expect(gates.states()).toEqual({ closed: 0, open: 0, 'half-open': 1 });
    now = 2_000; // and nobody tried it for another openMs
    // Before: kept for good, and shown half-open for good after its legacy session closed.
    expect(gates.states()).toEqual({ closed: 0, open: 0, 'half-open': 0 });
    expect(gates.size).toBe(0);
    expect(gates.gate('session').state).toBe('closed');
  });
});
