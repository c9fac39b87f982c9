/**
 * Process trees (issue 25): a stdio backend started through a wrapper that starts the real server as
 * a grandchild and passes no signal on (as `npx -y some-server` does). Closing an idle session, the
 * gateway's close() and a backend restart each end the wrapper AND the server it started (SIGTERM to
 * the real CLI: test/load/process-tree-cli.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LegacyBackend } from '../../src/core/backend/legacy-backend.js';
import { firstText, startGateway } from '../helpers/gateway.js';
import { isLive, killRecorded, pidFile, recordedPids, serverPid, startsIn, until, wrappedServer } from '../helpers/process-tree.js';
import { post } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };

const files: string[] = [];
afterEach(() => files.splice(0).forEach(killRecorded));

describe('process trees of stdio backends', () => {
  it('ends the wrapper and the server it started when an idle session is closed', async () => {
    const file = pidFile();
    files.push(file);
    const gw = await startGateway({ mcpServers: { tree: { ...wrappedServer(file), spareSessions: 0 } }, gateway: { idleSessionMs: 1_000 } });
    try {
      const server = await serverPid(gw.url);
      const start = startsIn(file).find((s) => s.server === server)!;
      expect(isLive(start.wrapper) && isLive(server)).toBe(true);
      // The idle sweep closes the call session after 1 s unused.
      await until('the backend session to close', () => (gw.gateway.backends[0] as LegacyBackend).stats.sessions === 0);
      await until('the server and its wrapper to exit', () => !isLive(server) && !isLive(start.wrapper));
    } finally {
      await gw.close();
    }
  });

  it("returns from the gateway's close() only when every wrapper and every server it started are gone", async () => {
    const file = pidFile();
    files.push(file);
    const gw = await startGateway({ mcpServers: { tree: wrappedServer(file) } });
    await serverPid(gw.url); // a call session (and a spare) besides the primary
    const parked = await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT });
    expect(parked.message['result']).toMatchObject({ resultType: 'input_required' });
    const pids = recordedPids(file);
    expect(pids.length).toBeGreaterThanOrEqual(4);
    expect(pids.filter(isLive)).toEqual(pids);
    await gw.close();
    expect(recordedPids(file).filter(isLive)).toEqual([]); // those started meanwhile (a spare) too
  });

  it('ends the old server when the backend restarts after its wrapper died, and serves from the new one', async () => {
    const file = pidFile();
    files.push(file);
    const gw = await startGateway({ mcpServers: { tree: wrappedServer(file) } });
    try {
      const backend = gw.gateway.backends[0] as LegacyBackend;
      const [primary] = startsIn(file); // the primary session starts before any call
      expect(backend.up).toBe(true);
      process.kill(primary!.wrapper, 'SIGKILL');
      await until('the killed server to be gone', () => !isLive(primary!.server));
      await until('the backend to restart', () => backend.up && startsIn(file).length >= 2);
      const r = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'after restart' } });
      expect(firstText(r.message['result'] as { content?: unknown })).toBe('after restart');
    } finally {
      await gw.close();
    }
  });
});
