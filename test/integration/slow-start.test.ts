/**
 * A backend slow to start is waited for once: a list waits at most `listTimeoutMs` for it (the
 * capabilities and the lists side by side, where one after the other they took twice that), and the
 * first call's own session starts while the call still waits for the tools list, not after it.
 *
 * The slow backend's first process serves only once the test opens its gate (FIXTURE_START_GATE), so
 * its start-up time is out of the figures. The bounds are the floor of the behaviour they rule out:
 * two deadlines one after the other take 2 × listTimeoutMs at the very least (a timer never fires
 * early), whatever the machine's load adds to one.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeArgs } from '../helpers/built.js';
import { FIXTURE, startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { backendState } from '../helpers/readiness.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const LIST_TIMEOUT_MS = 3_000;
let gw: RunningGateway | undefined;
let gate: string | undefined;
afterEach(async () => {
  if (gate) writeFileSync(gate, '');
  await gw?.close();
  gw = undefined;
  gate = undefined;
});

/**
 * Full collections in this process (the gateway's) every 200 ms until the returned stop: a deadline the
 * gateway made must fire whatever the collector does (a list's, made with AbortSignal.any, was collected
 * with its timer on a loaded CI machine and lasted 22 s: src/util/abort.ts `anySignal`).
 */
function collecting(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const timer = setInterval(gc, 200);
  return () => clearInterval(timer);
}

/**
 * The slow backend: its first process held at a gate the test opens; each process's spawn time logged
 * by a shell before node starts (a fixture's own start-up takes seconds on a loaded machine).
 */
function slowBackend(): { server: Record<string, unknown>; spawns: () => number[] } {
  const dir = mkdtempSync(join(tmpdir(), 'slow-start-'));
  gate = join(dir, 'gate');
  const spawnLog = join(dir, 'spawns.log');
  const server = {
    command: '/bin/sh',
    args: ['-c', 'date +%s%3N >> "$SPAWN_LOG"; exec "$@"', 'sh', process.execPath, ...nodeArgs(FIXTURE)],
    env: { SPAWN_LOG: spawnLog, FIXTURE_START_GATE: gate, FIXTURE_START_LOG: join(dir, 'starts.log') },
  };
  const spawns = () => (existsSync(spawnLog) ? readFileSync(spawnLog, 'utf8').trim().split('\n').map(Number) : []);
  return { server, spawns };
}

describe('a backend slow to start', () => {
  it('is waited for at most listTimeoutMs by a list, which answers with the others', async () => {
    const slow = slowBackend();
    gw = await startGateway({ mcpServers: { slow: slow.server, fast: stdioFixture() }, gateway: { listTimeoutMs: LIST_TIMEOUT_MS } }, { waitReady: false });
    // The fast backend up first: its own start-up (seconds on a loaded machine) is not the list's wait.
    const url = gw.url;
    await until('the fast backend to be up', async () => (await backendState(url, 'fast')) === 'up');
    const started = performance.now();
    const stop = collecting();
    const r = await post(gw.url, 'tools/list', {}).finally(stop);
    const ms = performance.now() - started;
    const names = (r.message['result'] as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toContain('fast__echo');
    expect(names.some((n) => n.startsWith('slow__'))).toBe(false);
    expect(ms).toBeGreaterThanOrEqual(LIST_TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(2 * LIST_TIMEOUT_MS);
  });

  it("starts the first call's session while that call still waits for the tools list", async () => {
    const slow = slowBackend();
    gw = await startGateway({ mcpServers: { slow: slow.server, fast: stdioFixture() }, gateway: { listTimeoutMs: LIST_TIMEOUT_MS } }, { waitReady: false });
    const sent = Date.now();
    const stop = collecting();
    const r = await post(gw.url, 'tools/call', { name: 'slow__echo', arguments: { text: 'late' } }).finally(stop);
    expect(r.message['result']).toMatchObject({ content: [{ text: 'late' }] });
    // The list's process (the first, held at its gate) and the call's own. The call's name is routed
    // within one deadline (the list it waits for cannot be had); its session is then spawned while its
    // own wait for the tools list goes on, not after that second deadline.
    const spawns = slow.spawns();
    expect(spawns.length).toBeGreaterThanOrEqual(2);
    expect(spawns[1]! - sent).toBeLessThan(2 * LIST_TIMEOUT_MS);
  });
});
