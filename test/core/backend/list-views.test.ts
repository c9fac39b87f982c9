/** Unit tests of the list views with stand-in sessions and a stand-in primary (which session lists what, and when). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BackendSession } from '../../../src/core/backend/backend-session.js';
import { ListViews, type ListViewsOptions } from '../../../src/core/backend/list-views.js';
import type { PrimaryConnection } from '../../../src/core/backend/primary-connection.js';
import type { InputCapabilities } from '../../../src/core/input-capabilities.js';
import { GatewayError } from '../../../src/errors.js';
import { silentLogger } from '../../../src/log.js';
import { until } from '../../helpers/until.js';

afterEach(() => vi.useRealTimers());

/** A session that lists one tool named after `label`, or fails its requests with `fail`. */
function fakeSession(label: string, fail?: () => unknown): BackendSession & { requests: string[] } {
  let closed = false;
  const onClose: (() => void)[] = [];
  const requests: string[] = [];
  const session = {
    requests,
    get closed() {
      return closed;
    },
    serverCapabilities: { tools: {} },
    async request(method: string) {
      requests.push(method);
      if (fail) throw fail();
      return { tools: [{ name: label }] };
    },
    onClose(cb: () => void) {
      onClose.push(cb);
    },
    async close() {
      closed = true;
      for (const cb of onClose.splice(0)) cb();
    },
  };
  return session as unknown as BackendSession & { requests: string[] };
}

function viewsOf(primarySession: BackendSession, extra: Partial<ListViewsOptions> = {}) {
  const primary = { silent: false, session: async () => primarySession };
  const started: { caps: InputCapabilities; session: BackendSession & { requests: string[] } }[] = [];
  const views = new ListViews({
    name: 'b',
    primary: primary as unknown as PrimaryConnection,
    primaryCaps: { roots: {} },
    start: async (caps) => {
      const session = fakeSession(`as ${JSON.stringify(caps)}`);
      started.push({ caps, session });
      return session;
    },
    cacheTtlMs: 60_000,
    listTimeoutMs: 1_000,
    idleMs: 10_000,
    logger: silentLogger,
    ...extra,
  });
  return { views, primary, started };
}

const names = (items: Record<string, unknown>[]): unknown[] => items.map((t) => t['name']);

describe('ListViews', () => {
  it("lists the primary's capability set on the primary, and any other on a session declaring exactly that set", async () => {
    const { views, started } = viewsOf(fakeSession('primary'));
    expect(names(await views.get('tools', { caps: { roots: {} } }))).toEqual(['primary']);
    const elicit = { elicitation: { form: {} } };
    expect(names(await views.get('tools', { caps: elicit }))).toEqual(['as {"elicitation":{"form":{}}}']);
    expect(names(await views.get('tools', { caps: elicit, fresh: true }))).toEqual(['as {"elicitation":{"form":{}}}']);
    expect(started.map((s) => s.caps)).toEqual([elicit]);
    expect(names(views.cached('tools', elicit) ?? [])).toEqual(['as {"elicitation":{"form":{}}}']);
    expect(views.cached('tools', {})).toBeUndefined();
    await views.close();
  });

  it("closes a view's own session once unused for idleMs, keeps its list cached, and reopens one on demand", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { views, started } = viewsOf(fakeSession('primary'));
    const caps = { sampling: {} };
    await views.get('tools', { caps });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(started[0]!.session.closed).toBe(false);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(started[0]!.session.closed).toBe(true);
    expect(views.cached('tools', caps)).toHaveLength(1);
    views.invalidate('tools');
    await views.get('tools', { caps });
    expect(started).toHaveLength(2);
    await views.close();
    expect(started[1]!.session.closed).toBe(true);
  });

  it('fails at once while the backend is silent, without asking any session', async () => {
    const session = fakeSession('primary');
    const { views, primary } = viewsOf(session);
    primary.silent = true;
    await expect(views.get('tools', { caps: { roots: {} } })).rejects.toMatchObject({ code: 'backend_unavailable' });
    expect(session.requests).toEqual([]);
    await views.close();
  });

  it('fails with backend_timeout when no session starts within listTimeoutMs', async () => {
    // a start that only ends when aborted (the views' close aborts it)
    const start = (_caps: InputCapabilities, signal: AbortSignal): Promise<BackendSession> =>
      new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error)));
    const { views } = viewsOf(fakeSession('primary'), { listTimeoutMs: 30, start });
    const e: unknown = await views.get('tools', { caps: {} }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(GatewayError);
    expect((e as GatewayError).code).toBe('backend_timeout');
    await views.close();
  });

  it('closes a session whose list failed in transport, but keeps one that answered an error', async () => {
    const broken = fakeSession('primary', () => new Error('fetch failed'));
    const refusing = fakeSession('primary', () => Object.assign(new Error('nope'), { code: -32603 }));
    // Side by side: once the transport failure's session is closed, the error answer's would be too.
    await Promise.all(
      [broken, refusing].map((s) =>
        viewsOf(s)
          .views.get('tools', { caps: { roots: {} } })
          .catch(() => undefined),
      ),
    );
    await until('the broken session to close', () => broken.closed);
    expect(refusing.closed).toBe(false);
  });
});
