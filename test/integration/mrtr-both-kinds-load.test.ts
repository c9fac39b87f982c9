/**
 * The quiet signal of an MRTR round at load (issue 30): a legacy stdio backend that sends an
 * elicitation and a sampling request at once (Promise.all: the SEP replay's 03-both-kinds-in-one-round)
 * gets both in one `input_required` round, call after call, with the default configuration, while
 * CPU-burning processes keep every core busy. At load the backend's two writes can reach the gateway in
 * two reads, the second a few milliseconds late (the backend preempted between them): a short fixed
 * quiet gap (1 ms) split such rounds; the backend process's own activity does not. A streamable HTTP
 * backend's activity cannot be seen: there the count of requests the tool's calls made together does
 * (core/calls/ask-patterns.ts): the round waits for the second, however late. The quiet gap stretched by
 * the machine's load, which this test relied on before, split 1 of 100 in CI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeArgs } from '../helpers/built.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { startHttpBackendProcess } from '../helpers/processes.js';
import { post } from '../helpers/wire.js';
import { ProcessWatch, canSeeProcessActivity } from '../../src/core/backend/process-activity.js';
import { ONCE_AFTER } from '../../src/core/calls/ask-patterns.js';

const FIXTURE = fileURLToPath(new URL('../../spec/sep-2322-draft/fixtures/draft-examples-server.ts', import.meta.url));
const CALLS = 100;
const CAPS = { elicitation: {}, sampling: {} };
/** The client's answer by request method. */
const ANSWERS: Record<string, unknown> = {
  'elicitation/create': { action: 'accept', content: { name: 'octocat', login: 'octocat' } },
  'sampling/createMessage': { role: 'assistant', content: { type: 'text', text: 'Paris.' }, model: 'm', stopReason: 'endTurn' },
};

let gw: RunningGateway;
let httpBackend: ChildProcess | undefined;
const burners: ChildProcess[] = [];

beforeAll(async () => {
  const web = await startHttpBackendProcess();
  httpBackend = web.child;
  gw = await startGateway({
    mcpServers: { draft: { command: process.execPath, args: nodeArgs(FIXTURE) }, legacy: stdioFixture(), web: { url: web.url } },
  });
});

afterAll(async () => {
  await stopBurners();
  await gw?.close();
  await stopProcesses(httpBackend ? [httpBackend] : []);
});

/** One process per core that never yields: the load of a busy CI machine. */
async function startBurners(): Promise<void> {
  for (let i = 0; i < Math.max(2, availableParallelism()); i++) {
    const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    burners.push(child);
    await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  }
}

async function stopBurners(): Promise<void> {
  await stopProcesses(burners.splice(0));
}

async function stopProcesses(children: ChildProcess[]): Promise<void> {
  const exits = children.map((child) => {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    return exited;
  });
  await Promise.all(exits);
}

/** One call of `tool` (an elicitation and a sampling request): the keys of its first round, after answering every round to the end. */
async function bothKinds(tool = 'draft__login_and_capital', args: Record<string, unknown> = {}): Promise<string[]> {
  const call = { name: tool, arguments: args };
  const reply = (await post(gw.url, 'tools/call', call, { caps: CAPS })).message;
  let result = reply['result'] as Record<string, unknown>;
  if (!result) throw new Error(`no result: ${JSON.stringify(reply).slice(0, 300)}`);
  const first = Object.keys((result['inputRequests'] as Record<string, unknown> | undefined) ?? {}).sort();
  for (let round = 0; result['resultType'] === 'input_required'; round++) {
    if (round > 2) throw new Error(`more rounds than requests: ${JSON.stringify(result).slice(0, 300)}`);
    const asked = Object.entries(result['inputRequests'] as Record<string, { method: string }>);
    const inputResponses = Object.fromEntries(asked.map(([key, { method }]) => [key, ANSWERS[method]]));
    const retry = { ...call, inputResponses, requestState: result['requestState'] };
    result = (await post(gw.url, 'tools/call', retry, { caps: CAPS })).message['result'] as Record<string, unknown>;
  }
  expect(JSON.stringify(result['content'])).toMatch(/octocat.*Paris/);
  return first;
}

// Both need the backend's activity seen in /proc (Linux); elsewhere a stdio round falls back to the time gap.
describe.skipIf(!canSeeProcessActivity)('MRTR round quiet signal at load (default configuration, stdio backend)', () => {
  it(
    `sends an elicitation and a sampling request made together in one round, ${CALLS} calls of ${CALLS}, with every core busy`,
    { timeout: 120_000 },
    async () => {
      await bothKinds(); // the backend started and warm before the load
      await startBurners();
      try {
        const split: number[] = [];
        for (let i = 0; i < CALLS; i++) if ((await bothKinds()).length !== 2) split.push(i);
        expect(split, 'calls whose two requests went out in two rounds').toEqual([]);
      } finally {
        await stopBurners();
      }
    },
  );
});

// A streamable HTTP backend's activity cannot be seen: once a call of the tool asked two things together,
// a round of the next waits for its second request (ask-patterns.ts), with no gap to guess. The tool writes
// its two requests apart (an event-loop turn and 0.6 ms of work between the two writes to the socket): the
// 1 ms gap a one-question tool gets split 2 of these rounds in 100 at load (three runs of three), and the
// gap stretched by the measured load (gateway/quiet-gap.ts) 1 in 100 in CI.
describe('MRTR round quiet gap at load (default configuration, streamable HTTP backend)', () => {
  const spaced = (): Promise<string[]> => bothKinds('web__both_spaced', { ms: 0.6 });
  it(
    `sends an elicitation and a sampling request written apart in one round, ${CALLS} calls of ${CALLS}, with every core busy`,
    { timeout: 120_000 },
    async () => {
      // The backend session open and warm before the load; the first call shows the tool asks two together.
      await spaced();
      await spaced();
      await startBurners();
      try {
        const split: number[] = [];
        for (let i = 0; i < CALLS; i++) if ((await spaced()).length !== 2) split.push(i);
        expect(split, 'calls whose two requests went out in two rounds').toEqual([]);
      } finally {
        await stopBurners();
      }
    },
  );
});

describe.skipIf(!canSeeProcessActivity)('MRTR round quiet signal: a backend at work between two requests it makes together', () => {
  it('waits while its process is at work (up to coalesceMs): one round', async () => {
    await bothKinds('legacy__both_after_work', { ms: 0 }); // the backend started and warm
    // 5 ms of CPU work between the two writes: a 1 ms quiet gap split these rounds.
    for (let i = 0; i < 10; i++) expect(await bothKinds('legacy__both_after_work', { ms: 5 })).toEqual(['github_login', 'sampling_1']);
  });
});

/** One call of `tool`, every round answered: the keys each round asked for, and the result's text. */
async function roundsOf(tool: string, args: Record<string, unknown>): Promise<{ rounds: string[][]; text: string }> {
  const call = { name: tool, arguments: args };
  let result = (await post(gw.url, 'tools/call', call, { caps: CAPS })).message['result'] as Record<string, unknown>;
  const rounds: string[][] = [];
  while (result['resultType'] === 'input_required') {
    if (rounds.length > 2) throw new Error(`more rounds than requests: ${JSON.stringify(result).slice(0, 300)}`);
    const asked = Object.entries(result['inputRequests'] as Record<string, { method: string }>);
    rounds.push(asked.map(([key]) => key).sort());
    const inputResponses = Object.fromEntries(asked.map(([key, { method }]) => [key, ANSWERS[method]]));
    result = (await post(gw.url, 'tools/call', { ...call, inputResponses, requestState: result['requestState'] }, { caps: CAPS })).message['result'] as Record<
      string,
      unknown
    >;
  }
  return { rounds, text: (result['content'] as { text: string }[])[0]!.text };
}

// An operation whose calls ask once, again and again, has only its backend processes' main threads
// looked at in /proc (ask-patterns.ts, issue 30): one read a process, not one a thread. A call of it
// that asks a second thing after all, with work on the main thread between the two writes, still gets
// both in one round (the main thread computes meanwhile). With the work in a worker thread, the main
// thread sleeps: that call's round may go out without the second request, once; the second request
// makes the operation one that asks again, and its rounds look at every thread from then on.
describe.skipIf(!canSeeProcessActivity)('MRTR rounds of an operation that asks once (stdio backend)', () => {
  const alone = { rounds: [['github_login']], text: 'login=octocat' };
  const together = { rounds: [['github_login', 'sampling_1']], text: 'login=octocat capital=Paris.' };
  /** Calls `tool` asking once until its rounds look at main threads only (ONCE_AFTER rounds, more if some went out at their bound under load). */
  async function learnOnce(tool: string, looks: ReturnType<typeof vi.spyOn>): Promise<void> {
    // What a client does first: the tool is then in its backend's list, what its ask pattern is learned under.
    await post(gw.url, 'tools/list', {}, { caps: CAPS });
    for (let i = 0; i < 2 * ONCE_AFTER; i++) {
      looks.mockClear();
      expect(await roundsOf(tool, { both: false })).toEqual(alone);
      if (scopesOf(looks).has('main')) return;
    }
    throw new Error(`${tool}: its rounds never looked at main threads only`);
  }
  const scopesOf = (looks: ReturnType<typeof vi.spyOn>): Set<unknown> => new Set(looks.mock.calls.map((args: unknown[]) => args[0] ?? 'threads'));

  it('looks at main threads only once it asked once ONCE_AFTER times; asked two things with work on the main thread between, gets both in one round', async () => {
    const tool = 'legacy__login_maybe_capital';
    const looks = vi.spyOn(ProcessWatch.prototype, 'activity');
    try {
      await learnOnce(tool, looks);
      // Together after all, the second request written after 5 ms of work on the main thread (a 1 ms gap split such rounds).
      expect(await roundsOf(tool, { both: true, ms: 5 })).toEqual(together);
      looks.mockClear();
      expect(await roundsOf(tool, { both: true, ms: 5 })).toEqual(together);
      expect(scopesOf(looks)).toEqual(new Set(['threads']));
    } finally {
      looks.mockRestore();
    }
  });

  it('asked two things with work in a worker thread between, answers both, and looks at every thread from then on', async () => {
    const tool = 'legacy__login_maybe_capital_too';
    const looks = vi.spyOn(ProcessWatch.prototype, 'activity');
    try {
      await learnOnce(tool, looks);
      // The main thread sleeps while the worker computes: the round may go out without the second
      // request (split in two), unless one of its looks was whole (every few are). The first call also
      // starts the worker, whose start-up may sleep in every thread for a moment: looked at whole or not.
      const first = await roundsOf(tool, { both: true, ms: 30, worker: true });
      expect(first.text).toBe(together.text);
      expect(first.rounds.flat().sort()).toEqual(['github_login', 'sampling_1']);
      looks.mockClear();
      // Every thread looked at now. Whether both go out in one round is the whole look's own quality at
      // load (1 run in 25 with two CPU burners split here): what this asserts is the scope.
      const next = await roundsOf(tool, { both: true, ms: 30, worker: true });
      expect(next.text).toBe(together.text);
      expect(next.rounds.flat().sort()).toEqual(['github_login', 'sampling_1']);
      expect(scopesOf(looks)).toEqual(new Set(['threads']));
    } finally {
      looks.mockRestore();
    }
  });
});
