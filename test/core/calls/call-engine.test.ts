/**
 * What the call engine (src/core/calls/call-engine.ts) gives each call to learn how its operation asks
 * for input (ask-patterns.ts): calls started with the same operation share what one of them learned; a
 * call started without one, or on a backend that relays another call's requests (the proxy tools), learns
 * nothing. The backend here is an in-memory port whose call makes two input requests at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryCallDirectory } from '../../../src/cluster/call-directory.js';
import type { BackendCall, BackendOutcome, BackendPort } from '../../../src/core/backend/port.js';
import { CallEngine, type StartCall } from '../../../src/core/calls/call-engine.js';
import type { Call } from '../../../src/core/calls/call.js';

const ELICIT = { message: 'm', requestedSchema: { type: 'object', properties: {} } };
const SAMPLE = { messages: [], maxTokens: 1 };

/** A backend whose calls ask for an elicitation and a sampling request together (or, `quiet`, nothing), then wait to be cancelled. */
function backendOf(name: string, opts: { relaysInput?: boolean; quiet?: boolean } = {}): BackendPort {
  return {
    name,
    relaysInput: opts.relaysInput ?? false,
    call: (c: BackendCall): Promise<BackendOutcome> => {
      if (!opts.quiet) {
        const signal = new AbortController().signal;
        void c.channel.requestInput('elicitation/create', ELICIT, signal).catch(() => undefined);
        void c.channel.requestInput('sampling/createMessage', SAMPLE, signal).catch(() => undefined);
      }
      return new Promise((_resolve, reject) => c.signal.addEventListener('abort', () => reject(c.signal.reason as Error), { once: true }));
    },
  } as unknown as BackendPort;
}

let engine: CallEngine;
const calls: Call[] = [];
afterEach(async () => {
  for (const call of calls.splice(0)) call.cancel(new Error('test over'));
  await engine?.close();
});

async function start(backend: BackendPort, operation: string | undefined, quiet = false): Promise<Call> {
  const spec: StartCall = {
    principal: 'p',
    method: 'tools/call',
    backend,
    params: { name: 'both', arguments: {} },
    caps: { elicitation: { form: {} }, sampling: {} },
    capabilities: { elicitation: {}, sampling: {} },
    operation,
  };
  const call = await engine.start(spec);
  calls.push(call);
  // An asking backend's two requests, however the call's start is scheduled.
  while (!quiet && call.pending.length < 2) await call.nextChange(new AbortController().signal, 1_000);
  return call;
}

describe('CallEngine: what a call learns of how its operation asks', () => {
  it('shares what one call of an operation learned with the next, and with no other operation', async () => {
    engine = new CallEngine({ instanceId: 'i', directory: new InMemoryCallDirectory(), callTimeoutMs: 60_000 });
    const first = await start(backendOf('b'), 'both');
    expect(first.pending).toHaveLength(2);
    expect(first.asksTogether).toBe(true);
    // Later calls that have asked nothing yet know it already.
    const quiet = backendOf('b', { quiet: true });
    expect((await start(quiet, 'both', true)).asksTogether).toBe(true);
    expect((await start(quiet, 'other', true)).asksTogether).toBe(false);
  });

  it('learns nothing for a call without an operation, nor for a backend that relays calls (the proxy tools)', async () => {
    engine = new CallEngine({ instanceId: 'i', directory: new InMemoryCallDirectory(), callTimeoutMs: 60_000 });
    const none = await start(backendOf('b'), undefined);
    expect(none.pending).toHaveLength(2);
    expect(none.asksTogether).toBe(false);
    const relayed = await start(backendOf('proxy', { relaysInput: true }), 'execute_tool');
    expect(relayed.pending).toHaveLength(2);
    expect(relayed.asksTogether).toBe(false);
    expect((await start(backendOf('proxy', { relaysInput: true }), 'execute_tool')).asksTogether).toBe(false);
  });
});

describe('CallEngine: sampling limits', () => {
  it('keeps no sampling gate for a scope whose calls never sampled (one per legacy session, for good, before)', async () => {
    const sampling = { maxConcurrent: 2, timeoutMs: 60_000, failureThreshold: 3, openMs: 30_000 };
    engine = new CallEngine({ instanceId: 'i', directory: new InMemoryCallDirectory(), callTimeoutMs: 60_000, sampling });
    for (let i = 0; i < 5; i++) {
      const call = await engine.start({ ...quietSpec(), scope: `session:${i}` });
      calls.push(call);
      call.cancel(new Error('done'));
    }
    expect(engine.breakers()).toEqual({ closed: 0, open: 0, 'half-open': 0 });
    // A call that samples gets its scope's gate then (and the gate goes once idle).
    const asking = await start(backendOf('b'), undefined);
    expect(asking.pending).toHaveLength(2);
    expect(engine.breakers()).toEqual({ closed: 1, open: 0, 'half-open': 0 });
  });
});

function quietSpec(): StartCall {
  return {
    principal: 'p',
    method: 'tools/call',
    backend: backendOf('b', { quiet: true }),
    params: { name: 'quiet', arguments: {} },
    caps: { elicitation: { form: {} }, sampling: {} },
    capabilities: { elicitation: {}, sampling: {} },
  };
}
