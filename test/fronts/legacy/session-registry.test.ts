/**
 * The legacy session registry: the one way in (`add`) and out (`remove`) for every legacy session, and
 * what leaving always does — out of the registry, state scope dropped, resource subscriptions ended,
 * closed — whichever way it leaves: removed, its connection closed, made room for, idle, the front closed.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { SessionRegistry, type RegisteredSession } from '../../../src/fronts/legacy/session-registry.js';
import { SessionSubscriptions } from '../../../src/fronts/legacy/session.js';
import { ManualClock } from '../../helpers/manual-clock.js';

class FakeSession implements RegisteredSession {
  readonly subscriptions = new SessionSubscriptions();
  closes = 0;
  #listener: (() => void) | undefined;
  #connectionClosed = false;

  constructor(
    readonly id: string,
    readonly principal: string,
    public lastUsed = 0,
    public busy = false,
  ) {}

  get scope(): string {
    return `session:${this.id}`;
  }

  idle(): boolean {
    return !this.busy;
  }

  touch(now: number): void {
    this.lastUsed = now;
  }

  onClosed(listener: () => void): void {
    this.#listener = listener;
    if (this.#connectionClosed) listener();
  }

  /** Its client went away (a DELETE, the /sse stream gone). */
  connectionCloses(): void {
    this.#connectionClosed = true;
    this.#listener?.();
  }

  async close(): Promise<void> {
    this.closes++;
  }

  /** A subscription to `uri`; the returned list records its end. */
  async subscribe(uri: string): Promise<string[]> {
    const ended: string[] = [];
    await this.subscriptions.add(uri, async () => void ended.push(uri));
    return ended;
  }
}

function setUp(limits = { total: 10, perPrincipal: 10 }, idleMs = 60_000) {
  const clock = new ManualClock(1_000_000);
  const dropped: string[] = [];
  const registry = new SessionRegistry<FakeSession>({
    limits,
    idleMs,
    scopes: { drop: (principal, scope) => void dropped.push(`${principal} ${scope}`) },
    log: silentLogger,
    clock,
  });
  return { registry, dropped, clock };
}

/** Lets background work (a removal started by a callback or the sweeper) run. */
const settle = () => new Promise((r) => setTimeout(r, 0));

describe('legacy session registry', () => {
  it('removes a session by taking it out, dropping its scope, ending its subscriptions and closing it', async () => {
    const { registry, dropped } = setUp();
    const s = new FakeSession('i~1', 'alice');
    registry.add(s);
    const ended = await s.subscribe('test://a');
    expect(registry.get('i~1', 'alice')).toBe(s);

    await registry.remove(s);
    expect(registry.get('i~1', 'alice')).toBeUndefined();
    expect(registry.size).toBe(0);
    expect(dropped).toEqual(['alice session:i~1']);
    expect(ended).toEqual(['test://a']);
    expect(s.closes).toBe(1);
  });

  it('does a removal once: a second remove, or one for a session never added, does nothing', async () => {
    const { registry, dropped } = setUp();
    const s = new FakeSession('i~1', 'alice');
    registry.add(s);
    await Promise.all([registry.remove(s), registry.remove(s)]);
    await registry.remove(s);
    expect([dropped.length, s.closes]).toEqual([1, 1]);
    const stranger = new FakeSession('i~2', 'alice');
    await registry.remove(stranger);
    expect([dropped.length, stranger.closes]).toEqual([1, 0]);
  });

  it('removes a session whose connection closed (a DELETE, a closed /sse stream): its subscriptions end', async () => {
    const { registry, dropped } = setUp();
    const s = new FakeSession('i~1', 'alice');
    registry.add(s);
    const ended = await s.subscribe('test://a');
    s.connectionCloses();
    await settle();
    expect(registry.size).toBe(0);
    expect(ended).toEqual(['test://a']);
    expect(dropped).toEqual(['alice session:i~1']);
  });

  it('removes at once a session whose connection closed before it was added', async () => {
    const { registry } = setUp();
    const s = new FakeSession('i~1', 'alice');
    s.connectionCloses();
    registry.add(s);
    await settle();
    expect(registry.size).toBe(0);
    expect(s.closes).toBe(1);
  });

  it("answers another principal's session id as unknown", () => {
    const { registry } = setUp();
    registry.add(new FakeSession('i~1', 'alice'));
    expect(registry.get('i~1', 'bob')).toBeUndefined();
    expect(registry.get('i~1', 'alice')?.id).toBe('i~1');
  });

  it("makes room by removing the principal's least recently used idle session, subscriptions and scope included", async () => {
    const { registry, dropped } = setUp({ total: 10, perPrincipal: 2 });
    const [older, newer] = [new FakeSession('i~old', 'alice', 1), new FakeSession('i~new', 'alice', 2)];
    registry.add(older);
    registry.add(newer);
    const ended = await older.subscribe('test://a');
    const room = await registry.reserve('alice');
    expect(room.kind).toBe('reserved');
    expect(registry.get('i~old', 'alice')).toBeUndefined();
    expect(registry.get('i~new', 'alice')).toBe(newer);
    expect(ended).toEqual(['test://a']);
    expect(dropped).toEqual(['alice session:i~old']);
    expect(older.closes).toBe(1);
  });

  it('refuses room when every session of the principal is busy, and closes none of them', async () => {
    const { registry } = setUp({ total: 10, perPrincipal: 1 });
    const busy = new FakeSession('i~1', 'alice', 0, true);
    registry.add(busy);
    expect(await registry.reserve('alice')).toEqual({ kind: 'refused', whose: 'principal' });
    expect([registry.size, busy.closes]).toEqual([1, 0]);
  });

  it('removes the sessions unused for idleMs, and only those', async () => {
    const { registry, clock } = setUp(undefined, 10_000);
    const stale = new FakeSession('i~stale', 'alice', clock.now());
    registry.add(stale);
    const ended = await stale.subscribe('test://a');
    clock.advance(6_000);
    const fresh = new FakeSession('i~fresh', 'alice', clock.now());
    registry.add(fresh);
    clock.advance(5_000); // the sweep every 5 s: `stale` unused for 11 s, `fresh` for 5 s
    await settle();
    expect([...registry.sessions()]).toEqual([fresh]);
    expect(ended).toEqual(['test://a']);
    clock.advance(10_000);
    await settle();
    expect(registry.size).toBe(0);
  });

  it('never removes a session at work (a call in flight or waiting for its answer, an open stream), and counts its idle time from when it stops', async () => {
    const { registry, clock } = setUp(undefined, 10_000);
    const working = new FakeSession('i~working', 'alice', clock.now(), true);
    registry.add(working);
    clock.advance(60_000); // a call of a minute, its last request long past idleMs
    await settle();
    expect([...registry.sessions()]).toEqual([working]);
    working.busy = false; // the call ended
    clock.advance(5_000); // one sweep later: used 5 s ago at most
    await settle();
    expect([...registry.sessions()]).toEqual([working]);
    clock.advance(10_000);
    await settle();
    expect(registry.size).toBe(0);
  });

  it('removes every session when it closes, and a session added afterwards', async () => {
    const { registry, clock } = setUp(undefined, 10_000);
    const [a, b] = [new FakeSession('i~a', 'alice', clock.now()), new FakeSession('i~b', 'bob', clock.now())];
    registry.add(a);
    registry.add(b);
    const ended = await b.subscribe('test://b');
    await registry.close();
    expect([registry.size, a.closes, b.closes]).toEqual([0, 1, 1]);
    expect(ended).toEqual(['test://b']);
    const late = new FakeSession('i~late', 'alice', clock.now());
    registry.add(late);
    await settle();
    expect([registry.size, late.closes]).toEqual([0, 1]);
  });
});

describe("a session's subscriptions", () => {
  it('ends a subscription that arrives after the session ended (its backend acknowledged it late)', async () => {
    const subscriptions = new SessionSubscriptions();
    await subscriptions.endAll();
    const ended: string[] = [];
    await subscriptions.add('test://late', async () => void ended.push('test://late'));
    expect([ended, subscriptions.size]).toEqual([['test://late'], 0]);
  });

  it('keeps one subscription per uri: a second one for the same uri is ended at once', async () => {
    const subscriptions = new SessionSubscriptions();
    const ended: string[] = [];
    await subscriptions.add('test://a', async () => void ended.push('first'));
    await subscriptions.add('test://a', async () => void ended.push('second'));
    expect([ended, subscriptions.size]).toEqual([['second'], 1]);
    await subscriptions.remove('test://a');
    expect(ended).toEqual(['second', 'first']);
  });
});
