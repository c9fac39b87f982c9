/** The wait of one MRTR round on a call: its end, its input once quiet for coalesceMs, or the moment it may become a task; events relayed meanwhile. */
import { createServer, connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { ActivityScope, BackendOutcome } from '../../../src/core/backend/port.js';
import { ONCE_AFTER, AskPatterns } from '../../../src/core/calls/ask-patterns.js';
import { Call } from '../../../src/core/calls/call.js';
import { waitForRound, type RoundEnd } from '../../../src/fronts/mrtr/round-waiter.js';
import { createDeferred } from '../../../src/util/deferred.js';

/** A running call; with `asks`, one whose operation's ask pattern is learned there (ask-patterns.ts). */
function running(asks?: { patterns: AskPatterns; operation: string }) {
  const call = new Call({
    id: 'c',
    principal: 'p',
    method: 'tools/call',
    backend: 'b',
    caps: { elicitation: { form: {} } },
    askPatterns: asks?.patterns,
    operation: asks?.operation,
  });
  const finish = createDeferred<BackendOutcome>();
  call.run(() => finish.promise);
  return { call, finish };
}
/** The backend asks the client for a name (the answer, if any, is not awaited). */
function ask(call: Call): void {
  call
    .requestInput('elicitation/create', { message: 'name?', requestedSchema: { type: 'object', properties: {} } }, new AbortController().signal)
    .catch(() => undefined);
}
const ACCEPT = { action: 'accept', content: {} };
const view = (extra: Partial<Parameters<typeof waitForRound>[1]> = {}) => ({ signal: new AbortController().signal, coalesceMs: 0, since: 0, ...extra });

describe('waitForRound', () => {
  it('ends with promote promoteAfterMs after the wait began when the call neither ended nor asked', async () => {
    const { call } = running();
    const began = performance.now();
    await expect(waitForRound(call, view({ promoteAfterMs: 60 }))).resolves.toMatchObject({ kind: 'promote' });
    // Not before promoteAfterMs (5 ms of timer slack): a lower bound, which a loaded machine cannot break.
    expect(performance.now() - began).toBeGreaterThanOrEqual(55);
  });

  it('ends with input that arrives before the promotion, and never promotes a call that waits for input', async () => {
    const { call } = running();
    const round = waitForRound(call, view({ promoteAfterMs: 10_000 }));
    setTimeout(() => ask(call), 20);
    await expect(round).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }] });
    await expect(waitForRound(call, view({ promoteAfterMs: 0 }))).resolves.toMatchObject({ kind: 'input' });
  });

  it('sends the requests a backend makes together in one round, after one event-loop turn: no fixed wait', async () => {
    const { call } = running();
    const round = waitForRound(call, view({ coalesceMs: 60_000 }));
    ask(call);
    ask(call);
    // Nothing else comes: the round goes out long before coalesceMs, with both.
    await expect(round).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }, { key: 'elicitation_2' }] });
  });

  it('waits for a quiet gap when asked to (quietMs), but never past coalesceMs after the first request', async () => {
    const { call } = running();
    ask(call);
    // A backend that never goes quiet: a new request every 2 ms, a quiet gap of 1 minute asked for.
    const more = setInterval(() => ask(call), 2);
    try {
      const end = await waitForRound(call, view({ quietMs: 60_000, coalesceMs: 40 }));
      expect(end.kind).toBe('input');
      expect((end as { pending: unknown[] }).pending.length).toBeGreaterThan(1);
    } finally {
      clearInterval(more);
    }
  });

  it("asks a quiet gap function with whether the call's operation asks for things together, where its wave's count is not known", async () => {
    const patterns = new AskPatterns();
    const { call } = running({ patterns, operation: 'both' });
    let asked: boolean[] = [];
    const quietMs = (together: boolean): number => (asked.push(together), 0);
    ask(call);
    await waitForRound(call, view({ quietMs, coalesceMs: 60_000 }));
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((t) => !t)).toBe(true); // nothing known of the operation
    asked = [];
    ask(call); // while the first is unanswered: the operation asks together, two in its first wave
    await waitForRound(call, view({ quietMs, coalesceMs: 60_000 }));
    expect(asked.every((t) => !t)).toBe(true); // as many as its calls asked in this wave: nothing more to wait for
    asked = [];
    expect(call.answer({ elicitation_1: ACCEPT, elicitation_2: ACCEPT })).toHaveLength(2);
    ask(call); // its second wave, whose count is not known, of an operation that asks together
    await waitForRound(call, view({ quietMs, coalesceMs: 60_000 }));
    // A together gap is asked once a round and kept.
    expect(asked).toEqual([true]);
  });

  it("waits for as many requests as its operation's calls made together in this wave, past any quiet gap, up to coalesceMs", async () => {
    const patterns = new AskPatterns();
    const first = running({ patterns, operation: 'both' }).call;
    ask(first);
    ask(first); // the operation's first wave holds two
    const { call } = running({ patterns, operation: 'both' });
    const round = waitForRound(call, view({ quietMs: 0, coalesceMs: 60_000 }));
    ask(call);
    let ended = false;
    round.then(
      () => (ended = true),
      () => undefined,
    );
    // A backend slow to write its second request (a loaded machine): a 0 ms gap would have sent the first alone after two turns.
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    expect(ended).toBe(false);
    ask(call);
    await expect(round).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }, { key: 'elicitation_2' }] });
  });

  it('sends what came at coalesceMs when fewer came than expected, and expects no more of that wave afterwards', async () => {
    const patterns = new AskPatterns();
    const first = running({ patterns, operation: 'maybe' }).call;
    ask(first);
    ask(first);
    const { call } = running({ patterns, operation: 'maybe' });
    ask(call);
    expect(call.waveExpectation).toBe('more');
    const began = performance.now();
    await expect(waitForRound(call, view({ quietMs: 0, coalesceMs: 40 }))).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }] });
    expect(performance.now() - began).toBeGreaterThanOrEqual(35); // held to its bound (a lower bound: load cannot break it)
    expect(call.waveExpectation).toBe('unknown'); // one came: not known any more (a count is two or more)
    const next = running({ patterns, operation: 'maybe' }).call;
    ask(next);
    expect(next.waveExpectation).toBe('unknown');
  });

  it("a proxy tool's round sees the call it relays stop expecting more, though nothing of its own changed", { timeout: 5_000 }, async () => {
    const patterns = new AskPatterns();
    const first = running({ patterns, operation: 'both' }).call;
    ask(first);
    ask(first); // the operation's first wave holds two
    const inner = running({ patterns, operation: 'both' }).call;
    const refused = new AbortController();
    inner.requestInput('elicitation/create', { message: 'name?', requestedSchema: { type: 'object', properties: {} } }, refused.signal).catch(() => undefined);
    const outer = running().call;
    outer.relays(inner);
    ask(outer); // the relayed request, as the proxy tool asks it of its client
    expect(outer.waveExpectation).toBe('more');
    const round = waitForRound(outer, view({ quietMs: 0, coalesceMs: 60_000 }));
    refused.abort(new Error('refused on the inner call')); // it expects nothing any more; the outer call is not told
    await expect(round).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }] });
  });

  it('learns during its round that its operation asks more together in this wave (another call of it did), and waits for the rest', async () => {
    const patterns = new AskPatterns();
    const { call } = running({ patterns, operation: 'op' });
    // 20 ms for one request at a time; a minute for operations that ask together (coalesceMs bounds it).
    const asked: boolean[] = [];
    const quietMs = (together: boolean): number => (asked.push(together), together ? 60_000 : 20);
    const began = performance.now();
    const round = waitForRound(call, view({ quietMs, coalesceMs: 60 }));
    ask(call);
    // The round has taken the short gap before another call of the operation asks two things together.
    while (asked.length === 0) await new Promise((r) => setImmediate(r));
    const other = running({ patterns, operation: 'op' }).call;
    ask(other);
    ask(other);
    await expect(round).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }] });
    expect(asked[0]).toBe(false);
    // Held to coalesceMs for the second request it was then expected to make, where the short gap would
    // have ended it ~20 ms after the first (a lower bound: a loaded machine cannot break it).
    expect(performance.now() - began).toBeGreaterThanOrEqual(55);
  });

  it('after the quiet gap, lets one turn of the event loop pass: a request already read off a socket joins the round', async () => {
    const { call } = running();
    // The backend's second request comes over a socket; it is written while the loop is busy, so it
    // waits in the kernel when the quiet timer expires (timers run before the loop reads sockets).
    const server = createServer((s) => s.on('data', () => ask(call)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    try {
      const round = waitForRound(call, view({ quietMs: 5, coalesceMs: 60_000 }));
      ask(call);
      setImmediate(() => {
        socket.write('next');
        const until = performance.now() + 20;
        while (performance.now() < until); // busy past the quiet gap
      });
      await expect(round).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }, { key: 'elicitation_2' }] });
    } finally {
      socket.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  it("with the backend's activity in view, waits while it is busy (however long the quiet gap) and goes out once it is idle", async () => {
    const { call } = running();
    let activity: 'busy' | 'idle' = 'busy';
    call.watchBackend(() => activity);
    ask(call);
    // A quiet gap of 0 and a minute's window: only the activity holds the round back.
    const round = waitForRound(call, view({ quietMs: 0, coalesceMs: 60_000 }));
    let ended = false;
    round.then(
      () => (ended = true),
      () => undefined,
    );
    // Several re-checks pass while busy (each a change of the call, or BUSY_RECHECK_MS).
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(ended).toBe(false);
    ask(call); // the second request, written while the backend was at work
    activity = 'idle';
    await expect(round).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }, { key: 'elicitation_2' }] });
  });

  it('a busy backend holds the round no longer than coalesceMs after the first request', async () => {
    const { call } = running();
    call.watchBackend(() => 'busy');
    ask(call);
    await expect(waitForRound(call, view({ coalesceMs: 30 }))).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }] });
  });

  it('an idle backend needs no quiet gap: the round goes out after an I/O turn, whatever quietMs says', async () => {
    const { call } = running();
    call.watchBackend(() => 'idle');
    ask(call);
    // quietMs of a minute would hold a backend whose activity is unknown that long (coalesceMs bounds it at 2 minutes).
    await expect(waitForRound(call, view({ quietMs: 60_000, coalesceMs: 120_000 }))).resolves.toMatchObject({ kind: 'input' });
  });

  it("an operation whose first rounds went out with one request ONCE_AFTER times, its backend seen idle, has only its processes' main threads looked at", async () => {
    const patterns = new AskPatterns();
    const scopes: (ActivityScope | undefined)[] = [];
    let activity: 'busy' | 'idle' = 'idle';
    const round = async (coalesceMs = 60_000): Promise<RoundEnd> => {
      const { call, finish } = running({ patterns, operation: 'ask' });
      call.watchBackend((scope) => {
        scopes.push(scope);
        return scope === 'main' ? 'idle' : activity;
      });
      ask(call);
      const end = await waitForRound(call, view({ coalesceMs }));
      finish.resolve({ kind: 'complete', result: { content: [] } });
      return end;
    };
    for (let i = 0; i < ONCE_AFTER; i++) await round();
    expect(scopes.length).toBeGreaterThanOrEqual(ONCE_AFTER);
    expect(new Set(scopes)).toEqual(new Set(['threads']));
    scopes.length = 0;
    // A whole look would see it busy now (and hold the round for its window): its main threads are idle.
    activity = 'busy';
    await expect(round(200)).resolves.toMatchObject({ kind: 'input', pending: [{ key: 'elicitation_1' }] });
    expect(new Set(scopes)).toEqual(new Set(['main']));
  });

  it('rounds that went out at their bound, with the backend busy or not in view, or with two requests, teach nothing of asking once', async () => {
    const patterns = new AskPatterns();
    const rounds = async (activity: 'busy' | 'unknown' | 'idle', requests: number): Promise<void> => {
      for (let i = 0; i < ONCE_AFTER; i++) {
        const { call, finish } = running({ patterns, operation: `ask-${activity}-${requests}` });
        call.watchBackend(() => activity);
        for (let r = 0; r < requests; r++) ask(call);
        await waitForRound(call, view({ coalesceMs: 5 }));
        finish.resolve({ kind: 'complete', result: { content: [] } });
        expect(call.asksOnce).toBe(false);
      }
    };
    await rounds('busy', 1);
    await rounds('unknown', 1);
    await rounds('idle', 2);
  });

  it('relays the events logged before the call ended and returns the new position', async () => {
    const { call, finish } = running();
    const sent: unknown[] = [];
    call.progress({ progress: 1 });
    finish.resolve({ kind: 'complete', result: { content: [] } });
    const end = await waitForRound(call, view({ sink: (n) => sent.push(n), progressToken: 't' }));
    expect(end).toMatchObject({ kind: 'done', seq: call.lastEventSeq });
    expect(sent).toEqual([{ method: 'notifications/progress', params: { progressToken: 't', progress: 1 } }]);
  });

  it('rejects when the signal aborts', async () => {
    const { call } = running();
    const gone = new AbortController();
    const round = waitForRound(call, view({ signal: gone.signal }));
    gone.abort(new Error('client went away'));
    await expect(round).rejects.toThrow(/client went away/);
  });
});
