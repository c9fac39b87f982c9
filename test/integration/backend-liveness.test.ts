/**
 * Liveness without false deaths (issue 25): a backend that answers pings late while it serves calls
 * is busy, not hung, and loses nothing; a frozen one (SIGSTOP) never holds a list past `listTimeoutMs`
 * nor a call past `callTimeoutMs`; a stdio backend that is down or restarting keeps its tools known
 * (they answer `backend_unavailable`, never "Unknown tool"); and a backend that gave up on its own
 * request says so (`backend_request_expired`). Here 200 calls are parked on the busy backend;
 * `npm run test:load` parks 2,000 (test/load/busy-backend.test.ts).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendState, captureLog, describeBusyBackend, until } from '../helpers/busy-backend.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { startHttpBackendProcess } from '../helpers/processes.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };
const dir = mkdtempSync(join(tmpdir(), 'liveness-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeBusyBackend(200);

describe('a frozen backend (SIGSTOP)', () => {
  let backend: { child: ChildProcess; url: string };
  let gw: RunningGateway;
  const log = captureLog();
  let listedAt = 0;
  beforeAll(async () => {
    backend = await startHttpBackendProcess();
    gw = await startGateway(
      { mcpServers: { web: { url: backend.url } }, gateway: { healthCheckMs: 0, listTimeoutMs: 2_000, callTimeoutMs: 5_000, cacheTtlMs: 1_000 } },
      { logger: log.logger },
    );
    const listed = await post(gw.url, 'tools/list');
    expect((listed.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain('echo');
    listedAt = Date.now();
    backend.child.kill('SIGSTOP');
  });
  afterAll(async () => {
    backend?.child.kill('SIGCONT');
    await gw?.close();
    backend?.child.kill('SIGKILL');
  });

  it('answers tools/list within listTimeoutMs: from cache, or without it for a view never listed; the log says which', async () => {
    // The cached list is older than cacheTtlMs (1 s) then: a list asks the backend.
    await until('the cached list to be older than cacheTtlMs', () => Date.now() > listedAt + 1_100);
    // The frozen backend never answers: an answer at all is listTimeoutMs (2 s) at work. The bound is
    // generous (a loaded machine) yet short of the 20 s connect deadline, which a list that waited for
    // its session's connect would wait out; how soon exactly is for `npm run bench`.
    let t0 = Date.now();
    const cached = await post(gw.url, 'tools/list', {}, { signal: AbortSignal.timeout(30_000) });
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect((cached.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain('echo');
    // Callers that declared elicitation see the list of a session of their own, which must connect first.
    t0 = Date.now();
    const fresh = await post(gw.url, 'tools/list', {}, { caps: ELICIT, signal: AbortSignal.timeout(30_000) });
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(fresh.message['result']).toMatchObject({ tools: expect.any(Array) });
    const msgs = log.lines.filter((l) => l['level'] === 40).map((l) => l['msg']);
    expect(msgs).toContain('backend list failed; answered with its last known list');
    expect(msgs).toContain('backend list failed; answered without it');
  });

  it('holds callTimeoutMs (5 s), a new session to connect included', async () => {
    const t0 = Date.now();
    // A tool it listed before it froze; no call has run yet, so the call needs a session of its own.
    const r = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { signal: AbortSignal.timeout(60_000) });
    const took = Date.now() - t0;
    expect(r.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_timeout' } });
    // backend_timeout is callTimeoutMs at work (the frozen backend never answers); the bound is
    // generous (a loaded machine) yet short of 5 s plus the 20 s connect deadline, which a call whose
    // timeout began after its session's connect would take. How close to 5 s is for `npm run bench`.
    expect(took).toBeLessThan(20_000);
  });
});

/** The pids of this process's children started with FIXTURE_NAME=`name`. */
function fixturePids(name: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' });
  const pids: number[] = [];
  for (const m of out.matchAll(/^\s*(\d+)\s+(\d+)\s*$/gm)) {
    if (Number(m[2]) !== process.pid) continue;
    try {
      if (readFileSync(`/proc/${m[1]}/environ`, 'utf8').split('\0').includes(`FIXTURE_NAME=${name}`)) pids.push(Number(m[1]));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('a stdio backend that is down or restarting', () => {
  const flag = join(dir, 'b-down');
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await startGateway({
      mcpServers: { a: stdioFixture({ FIXTURE_NAME: 'a' }), b: stdioFixture({ FIXTURE_NAME: 'b', FIXTURE_DOWN_FLAG: flag }) },
    });
  });
  afterAll(async () => {
    rmSync(flag, { force: true });
    await gw?.close();
  });

  it('keeps its tools listed and answers them backend_unavailable with a retry hint, never "Unknown tool"', { timeout: 90_000 }, async () => {
    const echo = () => post(gw.url, 'tools/call', { name: 'b__echo', arguments: { text: 'hi' } }, { signal: AbortSignal.timeout(30_000) });
    expect((await echo()).message['result']).toMatchObject({ content: [{ text: 'hi' }] });
    // It crashes and restarts: once it is back, its lists are fetched again.
    for (const pid of fixturePids('b')) process.kill(pid, 'SIGKILL');
    await until('b to go down', async () => (await backendState(gw, 'b')) !== 'up');
    await until('b to come back', async () => (await backendState(gw, 'b')) === 'up');
    // It crashes again and cannot start for a while.
    writeFileSync(flag, 'down');
    for (const pid of fixturePids('b')) process.kill(pid, 'SIGKILL');
    await until('b to be down', async () => (await backendState(gw, 'b')) === 'down');
    const listed = await post(gw.url, 'tools/list', {}, { signal: AbortSignal.timeout(30_000) });
    expect((listed.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['a__echo', 'b__echo']));
    const down = await echo();
    expect(down.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_unavailable' }, message: expect.stringMatching(/retry later/) });
    const prompt = await post(gw.url, 'prompts/get', { name: 'b__plain_prompt', arguments: { topic: 'owls' } }, { signal: AbortSignal.timeout(30_000) });
    expect(prompt.message['error']).toMatchObject({ code: -32603, data: { reason: 'backend_unavailable' } });
    rmSync(flag);
    await until('b to be back', async () => (await echo()).message['result'] !== undefined, 40_000);
  });
});

describe('a backend that gives up on its own request', () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await startGateway({ mcpServers: { legacy: stdioFixture() }, gateway: { maxParkedPerPrincipal: 8 } });
  });
  afterAll(async () => gw?.close());

  it('answers the late retry backend_request_expired, saying the backend stopped waiting (v1 SDK: 60 s)', async () => {
    const first = await post(gw.url, 'prompts/get', { name: 'impatient_prompt' }, { caps: ELICIT });
    const ir = first.message['result'] as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(ir.resultType).toBe('input_required');
    // The backend withdraws its request after 300 ms and its prompt fails with -32001.
    await until('the backend call to end', () => gw.gateway.engine.live === 0, 10_000);
    const key = Object.keys(ir.inputRequests)[0]!;
    const late = await post(
      gw.url,
      'prompts/get',
      { name: 'impatient_prompt', inputResponses: { [key]: { action: 'accept', content: { x: 'late' } } }, requestState: ir.requestState },
      { caps: ELICIT },
    );
    expect(late.message['error']).toMatchObject({
      code: -32603,
      data: { reason: 'backend_request_expired' },
      message: expect.stringMatching(/stopped waiting.*60 s/),
    });
  });
});
