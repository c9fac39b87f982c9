/**
 * Replays the draft SEP-2322 example exchanges (transcripts in this folder) through the gateway in
 * front of legacy fixture backends (fixtures/draft-examples-server.ts). Each transcript lists the
 * draft-era differences it expects (`draftDifferences`); everything else is compared field by field.
 * A transcript with `expectedFailure` needs a later capability: it must fail, and with the failure
 * its `expectedFailureMatch` names (so it cannot fail for another reason, and the marker goes stale
 * the moment it starts passing).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeArgs } from '../../test/helpers/built.js';
import { startGateway, type RunningGateway } from '../../test/helpers/gateway.js';
import { assertWireResponse, META_CAPS, META_VERSION, nameHeaderFor, readReply } from '../../test/helpers/wire.js';

interface Step {
  name: string;
  client: { jsonrpc: '2.0'; id: number; method: string; params: Record<string, unknown> };
  expect: { jsonrpc: '2.0'; id: number; result?: Record<string, unknown>; error?: Record<string, unknown> };
}
interface Transcript {
  title: string;
  source: string;
  endpoint: string;
  clientCapabilities: Record<string, unknown>;
  draftDifferences: string[];
  expectedFailure?: string;
  /** The failure an expected-failure transcript must fail with (a regular expression), so it cannot fail for another reason. */
  expectedFailureMatch?: string;
  steps: Step[];
}

const DIR = fileURLToPath(new URL('.', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/draft-examples-server.ts', import.meta.url));
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const transcripts = readdirSync(DIR)
  .filter((f) => /^\d+-.*\.json$/.test(f))
  .sort()
  .map((f) => ({ file: f, t: JSON.parse(readFileSync(`${DIR}/${f}`, 'utf8')) as Transcript }));

let gw: RunningGateway;
beforeAll(async () => {
  // pollInterval 100 as the draft's examples show; tasks need the client's `task` hint only on /mcp/draft.
  gw = await startGateway({
    mcpServers: { draft: { command: process.execPath, args: nodeArgs(FIXTURE) } },
    gateway: { tasks: { pollIntervalMs: 100 } },
  });
});

/** Task ids: the draft's literal ids, mapped to the ids the gateway handed out (documented difference). */
type IdMap = Map<string, string>;

/** `value` with every string that is a known draft task id replaced by the gateway's. */
function substitute<T>(value: T, ids: IdMap): T {
  if (typeof value === 'string') return (ids.get(value) ?? value) as T;
  if (Array.isArray(value)) return value.map((v) => substitute(v, ids)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, ids)])) as T;
  return value;
}

/** Checks the gateway's own timestamps and status message are there, then sets them aside on both sides. */
function setAsideTaskClock(actual: Record<string, unknown>, wanted: Record<string, unknown>, where: string): void {
  for (const key of ['createdAt', 'lastUpdatedAt', 'statusMessage']) {
    if (!(key in wanted)) continue;
    expect(typeof actual[key], `${where}.${key}`).toBe('string');
    delete actual[key];
    delete wanted[key];
  }
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
afterAll(async () => gw?.close());

/** Sends one draft client message as a final-wire request (adds `_meta` and the standard headers). */
async function send(t: Transcript, step: Step, state: string | undefined, ids: IdMap): Promise<Record<string, unknown>> {
  const params: Record<string, unknown> = substitute({ ...step.client.params }, ids);
  if ('requestState' in params) {
    if (state === undefined) throw new Error(`${step.name}: no requestState to echo`);
    params['requestState'] = state;
  }
  const draftMeta = (params['_meta'] as Record<string, unknown> | undefined) ?? {};
  params['_meta'] = { ...draftMeta, [META_VERSION]: '2026-07-28', [META_CAPS]: t.clientCapabilities };
  const name = nameHeaderFor(step.client.method, params);
  const res = await fetch(new URL(t.endpoint, gw.url), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': step.client.method,
      ...(name !== undefined ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ ...step.client, params }),
  });
  return (await readReply(res)).message;
}

/** Applies the documented draft differences, then compares field by field. Returns the new requestState. */
function compare(step: Step, actual: Record<string, unknown>, endpoint: string, ids: IdMap): string | undefined {
  if (!step.expect.error && actual['result'] === undefined) throw new Error(`${step.name}: expected a result, got ${JSON.stringify(actual)}`);
  if (endpoint === '/mcp') assertWireResponse(step.client.method, actual);
  expect(actual['jsonrpc']).toBe('2.0');
  expect(actual['id']).toBe(step.expect.id);
  if (step.expect.error) {
    expect(actual['error']).toMatchObject(step.expect.error);
    return undefined;
  }
  const result = { ...(actual['result'] as Record<string, unknown>) };
  // Difference: task ids are the gateway's; the first answer that names a task teaches the mapping.
  const draftTask = step.expect.result?.['task'] as Record<string, unknown> | undefined;
  const gotTask = result['task'] as Record<string, unknown> | undefined;
  if (typeof draftTask?.['taskId'] === 'string' && typeof gotTask?.['taskId'] === 'string') ids.set(draftTask['taskId'], gotTask['taskId']);
  const wanted = substitute({ ...step.expect.result }, ids);
  // Difference: the gateway's timestamps and status messages (checked for presence, not value).
  setAsideTaskClock(result, wanted, 'result');
  if (gotTask && wanted['task']) {
    result['task'] = { ...gotTask };
    wanted['task'] = { ...(wanted['task'] as Record<string, unknown>) };
    setAsideTaskClock(result['task'] as Record<string, unknown>, wanted['task'] as Record<string, unknown>, 'result.task');
  }
  // Difference: resultType on every final-wire result.
  expect(result['resultType']).toBe(wanted['inputRequests'] ? 'input_required' : 'complete');
  delete result['resultType'];
  // Difference: the gateway's identity in _meta.
  const meta = { ...((result['_meta'] as Record<string, unknown> | undefined) ?? {}) };
  expect(meta[SERVER_INFO]).toMatchObject({ name: 'mcp-mrtr-gateway' });
  delete meta[SERVER_INFO];
  if (Object.keys(meta).length) result['_meta'] = meta;
  else delete result['_meta'];
  // Difference: requestState is opaque, and always present with input requests of a request round;
  // a task's input requests (tasks/result) carry none: the task id is the continuation.
  let state: string | undefined;
  if (step.client.method === 'tasks/result') expect(result['requestState']).toBeUndefined();
  else if (wanted['inputRequests']) {
    expect(typeof result['requestState']).toBe('string');
    state = result['requestState'] as string;
    expect(state.length).toBeGreaterThan(0);
  }
  delete result['requestState'];
  delete wanted['requestState'];
  expect(result).toEqual(wanted);
  return state;
}

async function replay(t: Transcript): Promise<void> {
  let state: string | undefined;
  const ids: IdMap = new Map();
  for (const step of t.steps) {
    let actual = await send(t, step, state, ids);
    // Difference: a tasks/get step is a poll: repeated, as a polling client would, until the task
    // shows the status the draft shows (or ends), for at most 5 s.
    const want = step.expect.result?.['status'];
    const deadline = Date.now() + 5_000;
    while (step.client.method === 'tasks/get' && typeof want === 'string' && Date.now() < deadline) {
      const got = (actual['result'] as Record<string, unknown> | undefined)?.['status'];
      if (got === want || TERMINAL.has(String(got))) break;
      await new Promise((r) => setTimeout(r, 100));
      actual = await send(t, step, state, ids);
    }
    state = compare(step, actual, t.endpoint, ids) ?? state;
  }
}

describe('SEP-2322 draft examples, replayed through the gateway', () => {
  it('has a transcript for every example the issue names', () => {
    expect(transcripts.map((x) => x.file)).toEqual([
      '01-ephemeral-basic-flow.json',
      '02-ephemeral-multi-round.json',
      '03-both-kinds-in-one-round.json',
      '04-unexpected-and-missing-responses.json',
      '05-persistent-workflow-echo-task.json',
      '06-persistent-workflow-two-rounds.json',
    ]);
    for (const { t } of transcripts) expect(t.draftDifferences.length).toBeGreaterThan(0);
  });

  for (const { file, t } of transcripts) {
    if (t.expectedFailure) {
      it(`${file}: ${t.title} — fails as expected: ${t.expectedFailure}`, async () => {
        expect(t.expectedFailureMatch, 'an expected failure names the failure it expects').toBeTruthy();
        await expect(replay(t)).rejects.toThrow(new RegExp(t.expectedFailureMatch!));
      });
    } else it(`${file}: ${t.title}`, () => replay(t));
  }
});
