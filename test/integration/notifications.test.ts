/**
 * Every notification a backend sends for a call before its result reaches the client before the
 * result — including a progress notification written back to back with the result (the SDK client
 * drops its per-request progress handler when the response arrives, before delivering such a last
 * progress, so the gateway routes progress by its own token).
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { assertWireNotification, assertWireResponse, inProcess, post } from '../helpers/wire.js';

const cancelLog = join(mkdtempSync(join(tmpdir(), 'notif-')), 'cancel.log');
let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({ mcpServers: { legacy: { ...stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog }), maxSessions: 4 } } });
});
afterAll(async () => gw?.close());

describe('notifications before the result', () => {
  it('relays the last progress of 40 stdio calls whose result follows it at once', async () => {
    const fetch = inProcess(gw.gateway);
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        post(gw.url, 'tools/call', { name: 'progress', arguments: { steps: 3, gapMs: 0 } }, { meta: { progressToken: `t-${i}` }, fetch }),
      ),
    );
    replies.forEach((r, i) => {
      assertWireResponse('tools/call', r.message);
      r.notifications.forEach(assertWireNotification);
      expect(r.message['result']).toMatchObject({ content: [{ text: 'done 3' }] });
      const progress = r.notifications.filter((n) => n['method'] === 'notifications/progress').map((n) => n['params']);
      expect(progress, `call ${i}`).toEqual([1, 2, 3].map((p) => ({ progressToken: `t-${i}`, progress: p, total: 3, message: `step ${p}` })));
    });
  });

  it('never sends notifications/cancelled for a request the backend already answered', async () => {
    for (let i = 0; i < 5; i++) await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: `e${i}` } });
    const r = await post(gw.url, 'tools/call', { name: 'elicit_name' }, { caps: { elicitation: {} } });
    const requestState = (r.message['result'] as { requestState: string }).requestState;
    await post(
      gw.url,
      'tools/call',
      { name: 'elicit_name', inputResponses: { user_name: { action: 'accept', content: { name: 'N' } } }, requestState },
      { caps: { elicitation: {} } },
    );
    // one more call on each session: a cancellation sent before it has been handled by the time it answers
    await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'flush' } });
    await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'flush' } }, { caps: { elicitation: {} } });
    expect(existsSync(cancelLog) ? readFileSync(cancelLog, 'utf8') : '').toBe('');
  });
});
