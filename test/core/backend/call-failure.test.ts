import { describe, expect, it } from 'vitest';
import { TIMER_SLACK_MS, classifyFailure, type FailureContext } from '../../../src/core/backend/call-failure.js';
import { ResetBeforeAnswer } from '../../../src/core/backend/http-exchange.js';
import { GatewayError } from '../../../src/errors.js';

const NOW = 1_000_000;
const base: FailureContext = { backend: 'b', aborted: false, sessionClosed: false, shared: false, deadline: NOW + 10_000, now: NOW };
const rpcError = (code: number, data?: unknown): Error => Object.assign(new Error(`rpc ${code}`), { code, data });
const transport = (code?: number): Error => Object.assign(new Error('fetch failed'), code === undefined ? {} : { code });
const reason = (e: unknown): string | undefined => (e instanceof GatewayError ? e.code : undefined);

describe('classifyFailure', () => {
  it("keeps any session after the backend's own error answer, and passes the error on as it is", () => {
    const e = rpcError(-32602);
    expect(classifyFailure(e, base)).toEqual({ error: e, session: 'keep' });
    expect(classifyFailure(e, { ...base, shared: true })).toEqual({ error: e, session: 'keep' });
  });

  it('discards an exclusive session whose call was cancelled, but keeps a shared one', () => {
    const e = new Error('aborted');
    expect(classifyFailure(e, { ...base, aborted: true })).toEqual({ error: e, session: 'discard' });
    expect(classifyFailure(e, { ...base, aborted: true, shared: true }).session).toBe('keep');
    // an error answer that arrives after the caller went away no longer says the backend's side is over
    expect(classifyFailure(rpcError(-32602), { ...base, aborted: true }).session).toBe('discard');
  });

  it('reads a -32001 at our deadline as ours (backend_timeout), and before it as the backend request that expired', () => {
    const local = rpcError(-32001, { timeout: 10_000 });
    const ours = classifyFailure(local, { ...base, now: base.deadline - TIMER_SLACK_MS });
    expect([reason(ours.error), ours.session]).toEqual(['backend_timeout', 'discard']);
    expect((ours.error as Error).message).toMatch(/ran past callTimeoutMs/); // the setting an operator raises
    const early = classifyFailure(local, { ...base, now: base.deadline - TIMER_SLACK_MS - 1 });
    expect([reason(early.error), early.session]).toEqual(['backend_request_expired', 'discard']);
    const sent = classifyFailure(rpcError(-32001), { ...base, shared: true });
    expect([reason(sent.error), sent.session]).toEqual(['backend_request_expired', 'keep']);
  });

  it('says backend_closed when the session closed under the call', () => {
    expect(reason(classifyFailure(transport(), { ...base, sessionClosed: true }).error)).toBe('backend_closed');
    expect(reason(classifyFailure(new Error('Not connected'), base).error)).toBe('backend_closed');
    // the SDK's own "connection closed" answer is a JSON-RPC error: not discarded (the pool drops the closed session itself)
    expect(classifyFailure(rpcError(-32000), { ...base, sessionClosed: true }).session).toBe('keep');
    expect(classifyFailure(transport(), { ...base, sessionClosed: true }).session).toBe('discard');
  });

  it('probes a shared session after a transport failure, and discards a stale (404) or exclusive one at once', () => {
    const shared = classifyFailure(transport(), { ...base, shared: true });
    expect([reason(shared.error), shared.session]).toEqual(['backend_unavailable', 'probe']);
    expect(classifyFailure(transport(404), { ...base, shared: true }).session).toBe('discard');
    expect(classifyFailure(transport(), base).session).toBe('discard');
  });

  it('says a call reset after it was sent may have run (backend_closed, never backend_unavailable: a client would retry it)', () => {
    const shared = classifyFailure(new ResetBeforeAnswer(transport()), { ...base, shared: true });
    expect([reason(shared.error), shared.session]).toEqual(['backend_closed', 'probe']);
    expect((shared.error as Error).message).toMatch(/it may have run, and was not sent again/);
    expect(classifyFailure(new ResetBeforeAnswer(transport()), base).session).toBe('discard');
  });

  it("passes on the session's own failure of a call (its response stream broke) as it is", () => {
    const e = new GatewayError('backend_closed', 'b (the call\u2019s response stream broke)');
    expect(classifyFailure(e, { ...base, shared: true })).toEqual({ error: e, session: 'keep' });
  });
});
