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
  gw = await startGateway({ mcpServers: { draft: { command: process.execPath, args: ['--import', 'tsx', FIXTURE] } } });
});
afterAll(async () => gw?.close());

/** Sends one draft client message as a final-wire request (adds `_meta` and the standard headers). */
async function send(t: Transcript, step: Step, state: string | undefined): Promise<Record<string, unknown>> {
  const params: Record<string, unknown> = { ...step.client.params };
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
function compare(step: Step, actual: Record<string, unknown>, endpoint: string): string | undefined {
  if (!step.expect.error && actual['result'] === undefined) throw new Error(`${step.name}: expected a result, got ${JSON.stringify(actual)}`);
  if (endpoint === '/mcp') assertWireResponse(step.client.method, actual);
  expect(actual['jsonrpc']).toBe('2.0');
  expect(actual['id']).toBe(step.expect.id);
  if (step.expect.error) {
    expect(actual['error']).toMatchObject(step.expect.error);
    return undefined;
  }
  const result = { ...(actual['result'] as Record<string, unknown>) };
  const wanted = { ...step.expect.result };
  // Difference: resultType on every final-wire result.
  expect(result['resultType']).toBe(wanted['inputRequests'] ? 'input_required' : 'complete');
  delete result['resultType'];
  // Difference: the gateway's identity in _meta.
  const meta = { ...((result['_meta'] as Record<string, unknown> | undefined) ?? {}) };
  expect(meta[SERVER_INFO]).toMatchObject({ name: 'mcp-mrtr-gateway' });
  delete meta[SERVER_INFO];
  if (Object.keys(meta).length) result['_meta'] = meta;
  else delete result['_meta'];
  // Difference: requestState is opaque, and always present with input requests.
  let state: string | undefined;
  if (wanted['inputRequests']) {
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
  for (const step of t.steps) {
    const actual = await send(t, step, state);
    state = compare(step, actual, t.endpoint) ?? state;
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
