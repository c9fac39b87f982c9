/**
 * A call that waits for its client's answer gives its backend process up to a call that waits for one,
 * once it has waited `reclaimParkedAfterMs` and the backend has no other (`maxSessions`): the waiting
 * call is served by the real stdio backend, and the retry of the call it replaced is told why it is gone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LegacyBackend } from '../../src/core/backend/legacy-backend.js';
import { firstText, startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { post, type WireReply } from '../helpers/wire.js';

const ELICIT = { elicitation: {} };

function stateOf(r: WireReply): string {
  const result = r.message['result'] as { resultType?: string; requestState?: string } | undefined;
  if (result?.resultType !== 'input_required' || !result.requestState) throw new Error(`expected input_required: ${JSON.stringify(r.message)}`);
  return result.requestState;
}

let gw: RunningGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

describe('a parked call holding the only backend process', () => {
  it('gives it up to a call that waits for one once it has waited reclaimParkedAfterMs; its retry is told why', async () => {
    gw = await startGateway({
      mcpServers: { legacy: { ...stdioFixture(), maxSessions: 1, spareSessions: 0 } },
      gateway: { reclaimParkedAfterMs: 300, sessionWaitMs: 25_000 },
    });
    const backend = gw.gateway.backends[0] as LegacyBackend;
    const parked = stateOf(await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT }));
    expect(backend.stats).toMatchObject({ sessions: 1, busy: 1 });
    // Without reclaiming, this call waits for the parked one's process until sessionWaitMs: pool_exhausted.
    const served = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'served' } }, { caps: ELICIT });
    expect(firstText(served.message['result'] as { content?: unknown })).toBe('served');
    const retry = await post(
      gw.url,
      'tools/call',
      { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'late' } } }, requestState: parked },
      { caps: ELICIT },
    );
    // Told why, in a reason a client can act on (start it again), as a legacy client's call is.
    expect(retry.message['error']).toMatchObject({
      code: -32603,
      data: { reason: 'call_reclaimed' },
      message: expect.stringContaining('reclaimParkedAfterMs'),
    });
  });

  it('is never given up while reclaimParkedAfterMs is 0: the other call waits until sessionWaitMs', async () => {
    gw = await startGateway({
      mcpServers: { legacy: { ...stdioFixture(), maxSessions: 1, spareSessions: 0 } },
      gateway: { reclaimParkedAfterMs: 0, sessionWaitMs: 1_000 },
    });
    stateOf(await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: ELICIT }));
    const refused = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, { caps: ELICIT });
    expect(refused.message['error']).toMatchObject({ data: { reason: 'pool_exhausted' } });
    // What holds the sessions, said: calls waiting for their clients (often ones their clients abandoned).
    expect((refused.message['error'] as { message: string }).message).toContain(
      "legacy (1 of its 1 sessions hold calls waiting for their clients' answers, until parkTimeoutMs: gateway.reclaimParkedAfterMs is 0)",
    );
  });
});
