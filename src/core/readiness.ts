/**
 * `GET /readyz`: each backend's state, and the gateway's: `ready` (all up), `degraded` (some up),
 * `unavailable` (none), `closing` (draining or closed). A backend's stderr is never in it (it stays in
 * the log); what else a front leaves out is its own call (the edge drops `lastError`, which can name
 * the core's internal address where /readyz may be public). The Node gateway's and the edge's.
 */
import type { BackendHealth, BackendPort } from './backend/port.js';

export type Readiness = () => { ready: boolean; body: Record<string, unknown> };

/**
 * How long `/readyz` waits for a backend it asks (`checkReach`): one that has not answered by then is
 * down (frozen, or too slow to serve), and the answer never waits longer (a probe's own timeout is
 * often 1 to 5 s).
 */
export const REACH_CHECK_MS = 2_000;

/** `readiness`, each backend that can be asked (`checkReach`) asked first: what it says is current. */
export function checkingReach(backends: readonly BackendPort[], readiness: Readiness, timeoutMs = REACH_CHECK_MS): () => Promise<ReturnType<Readiness>> {
  return async () => {
    await Promise.all(backends.flatMap((b) => (b.checkReach ? [b.checkReach(timeoutMs)] : [])));
    return readiness();
  };
}

export function readinessOf(backends: readonly BackendPort[], stopping: () => boolean, omit: readonly (keyof BackendHealth)[] = []): Readiness {
  const hidden = new Set<string>(['stderr', ...omit]);
  return () => {
    const health = backends.map((b) => Object.fromEntries(Object.entries(b.health()).filter(([k]) => !hidden.has(k))) as Partial<BackendHealth>);
    const upCount = health.filter((h) => h.state === 'up').length;
    const status = stopping() ? 'closing' : upCount === health.length ? 'ready' : upCount > 0 ? 'degraded' : 'unavailable';
    return { ready: status === 'ready' || status === 'degraded', body: { status, backends: health } };
  };
}
