/**
 * A gateway that closes tells its stdio backends of no request but those still in flight: the
 * `initialize` and the ping that set each session up, answered long before, are not cancelled.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startGateway, stdioFixture } from '../helpers/gateway.js';
import { post } from '../helpers/wire.js';

describe('closing the gateway', () => {
  it('sends no notifications/cancelled for requests its backends answered', async () => {
    const cancelLog = join(mkdtempSync(join(tmpdir(), 'close-cancels-')), 'cancel.log');
    const gw = await startGateway({ mcpServers: { legacy: stdioFixture({ FIXTURE_CANCEL_LOG: cancelLog }) } });
    // The primary session (lists) and a call's session, each set up with initialize and a ping.
    const reply = await post(gw.url, 'tools/call', { name: 'echo', arguments: { text: 'hi' } });
    expect(reply.message['result']).toMatchObject({ content: [{ type: 'text', text: 'hi' }] });
    await gw.close();
    const cancelled = existsSync(cancelLog) ? readFileSync(cancelLog, 'utf8').trim() : '';
    expect(cancelled).toBe('');
  });
});
