/**
 * Helpers of the liveness tests (issue 25), and the busy-backend scenario they share with
 * `npm run test:load`: a backend that answers pings 5 s late while it serves calls is busy, not hung,
 * and loses none of the calls parked on it (`npm test` parks 200; test/load parks 2,000).
 */
import { type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from './gateway.js';
import { captureLog } from './log.js';
import { pause, until } from './until.js';
import { backendState as stateOf } from './readiness.js';
import { startHttpBackendProcess } from './processes.js';
import { post } from './wire.js';

const ELICIT = { elicitation: {} };

export { captureLog } from './log.js';
export { until } from './until.js';

/** The state `/readyz` gives the backend `name` of `gw`. */
export const backendState = (gw: RunningGateway, name: string): Promise<string | undefined> => stateOf(gw.url, name);

/** Runs `fn` over `items` with at most `limit` at once. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

export function describeBusyBackend(calls: number): void {
  describe('a busy backend that answers pings 5 s late', () => {
    const dir = mkdtempSync(join(tmpdir(), 'busy-backend-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const pingLog = join(dir, 'pings');
    const log = captureLog();
    let backend: { child: ChildProcess; url: string };
    let gw: RunningGateway;
    beforeAll(async () => {
      backend = await startHttpBackendProcess(0, { FIXTURE_PING_DELAY_MS: '5000', FIXTURE_PING_LOG: pingLog });
      // Pinged every 200 ms: a gateway that gave up on a ping after 3 s would take it for hung within seconds.
      gw = await startGateway(
        { mcpServers: { web: { url: backend.url } }, gateway: { healthCheckMs: 200, maxParkedPerPrincipal: 4_096, maxParkedTotal: 4_096 } },
        { logger: log.logger },
      );
    });
    afterAll(async () => {
      await gw?.close();
      backend?.child.kill('SIGKILL');
    });

    it(
      `loses none of ${calls.toLocaleString('en')} parked calls: every retry completes, the backend is never taken for hung`,
      { timeout: 240_000 },
      async () => {
        let stop = false;
        const states = new Set<string>();
        const watch = (async () => {
          while (!stop) {
            states.add((await backendState(gw, 'web')) ?? 'missing');
            await pause(100); // samples the state while the calls run
          }
        })();
        try {
          const park = async (i: number): Promise<string> => {
            const r = await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT, signal: AbortSignal.timeout(60_000) });
            const state = (r.message['result'] as { requestState?: string } | undefined)?.requestState;
            if (!state) throw new Error(`call ${i} was not parked: ${JSON.stringify(r.message).slice(0, 300)}`);
            return state;
          };
          const ids = Array.from({ length: calls }, (_, i) => i);
          const first = await pool(ids.slice(0, calls / 2), 50, park);
          // A ping has now been answered 5 s late: an impatient gateway declared the backend hung by now.
          await until('a late pong', () => existsSync(pingLog) && readFileSync(pingLog, 'utf8').includes('late pong'), 30_000);
          const second = await pool(ids.slice(calls / 2), 50, park);
          const states2 = [...first, ...second];
          const answers = await pool(ids, 50, async (i) => {
            const r = await post(
              gw.url,
              'tools/call',
              { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: `p${i}` } } }, requestState: states2[i] },
              { caps: ELICIT, signal: AbortSignal.timeout(60_000) },
            );
            return (r.message['result'] as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text ?? JSON.stringify(r.message).slice(0, 300);
          });
          const lost = answers.filter((text, i) => text !== `Hello, p${i}!`);
          expect(lost.slice(0, 3)).toEqual([]);
          expect(lost.length).toBe(0);
        } finally {
          stop = true;
          await watch;
        }
        expect([...states]).toEqual(['up']);
        expect(log.lines.filter((l) => typeof l['msg'] === 'string' && /hung|silent|gone/.test(l['msg']))).toEqual([]);
      },
    );
  });
}
