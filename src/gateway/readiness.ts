/**
 * `GET /readyz`: each backend's state (its stderr stays in the log, never in a response), and the
 * gateway's: `ready` (all up), `degraded` (some up), `unavailable` (none), `closing` (draining or closed).
 */
import type { BackendPort } from '../core/backend/port.js';
import type { Lifecycle } from './lifecycle.js';

export function readinessOf(backends: readonly BackendPort[], life: Lifecycle): () => { ready: boolean; body: Record<string, unknown> } {
  return () => {
    const health = backends.map((b) => {
      const { stderr: _stderr, ...h } = b.health();
      return h;
    });
    const upCount = health.filter((h) => h.state === 'up').length;
    const status = life.stopping() ? 'closing' : upCount === health.length ? 'ready' : upCount > 0 ? 'degraded' : 'unavailable';
    return { ready: status === 'ready' || status === 'degraded', body: { status, backends: health } };
  };
}
