/**
 * Rate limits per principal (issue 29, `gateway.rateLimits`; README "Rate limits"): which bucket a
 * request or a call is charged to, and the refusal a client gets. Three limits, each off unless set:
 *
 * - requests: a token bucket of JSON-RPC requests per principal, charged where a request arrives (the
 *   HTTP layer; a legacy HTTP+SSE message in its session front). MRTR retries are not charged there.
 * - calls per principal × server: a token bucket of tools/call, prompts/get and resources/read per
 *   backend, charged when the call starts (core/calls/call-engine.ts `admit`), once its route is known.
 * - concurrent calls: backend calls of one principal in flight at once (waiting for input, or running as
 *   a task, included), counted on the quotas seam (cluster-wide with Redis) and freed when the call ends.
 *
 * A continuation (a task's resume: the next call of a 2026-07-28 backend's round, inside a task the
 * gateway holds) continues a call already admitted: it is charged to no bucket, and counts among the
 * concurrent calls but is never refused by that bound. A client's retry with a 2026-07-28 backend's
 * own requestState is charged as a new call: such a state is not claimed once and could be replayed.
 */
import type { GatewaySettings } from '../config.js';
import type { Quotas } from '../cluster/quotas.js';
import type { BucketRule, RateBuckets } from '../cluster/rate-buckets.js';
import { rateLimitedError, type ProtocolError } from '../errors.js';
import { background, type BackgroundLog } from '../util/background.js';

export type RateLimitSettings = NonNullable<GatewaySettings['rateLimits']>;

/** A backend call about to start, as the limits see it. */
export interface CallTicket {
  readonly principal: string;
  readonly backend: string;
  /** It continues a call already admitted (see the header). */
  readonly continues: boolean;
}

export interface RateLimits {
  /** True when requests are limited (`requestsPerMinute`). */
  readonly limitsRequests: boolean;
  /** True when calls are limited (per server, or in number at once). */
  readonly limitsCalls: boolean;
  /** Charges `cost` requests to `principal`: undefined when admitted, else the refusal (`rate_limited`). */
  chargeRequests(principal: string, cost: number): Promise<ProtocolError | undefined>;
  /**
   * Admits a backend call, or throws the refusal (`rate_limited`); resolves to what frees its unit of
   * the concurrency bound (idempotent), to be called when the call ends.
   */
  admitCall(call: CallTicket): Promise<() => void>;
}

export interface RateLimitDeps {
  readonly buckets: RateBuckets;
  /** Where the concurrent calls are counted. */
  readonly quotas: Quotas;
  /** Where a unit that could not be given back is reported. */
  readonly log?: BackgroundLog | undefined;
}

/** The config keys named in refusals. */
const KEY = 'gateway.rateLimits';

/** A hint for a refusal by the concurrency bound: nobody knows when one of the caller's calls ends. */
const CONCURRENCY_RETRY_MS = 1_000;

/** A bucket of `perMinute` tokens a minute holding `burst` (default: one minute's worth, at least 1). */
export function bucketRule(perMinute: number, burst: number | undefined): BucketRule {
  return { capacity: burst ?? Math.max(1, Math.ceil(perMinute)), perMs: perMinute / 60_000 };
}

export function createRateLimits(settings: RateLimitSettings, deps: RateLimitDeps): RateLimits {
  const requests = settings.requestsPerMinute !== undefined ? bucketRule(settings.requestsPerMinute, settings.burst) : undefined;
  const serverRule = (backend: string): { rule: BucketRule; limit: string } | undefined => {
    const own = Object.hasOwn(settings.servers, backend) ? settings.servers[backend] : undefined;
    const chosen = own ?? settings.perServer;
    if (!chosen) return undefined;
    return { rule: bucketRule(chosen.callsPerMinute, chosen.burst), limit: own ? `${KEY}.servers.${backend}` : `${KEY}.perServer` };
  };
  const limitsServers = settings.perServer !== undefined || Object.keys(settings.servers).length > 0;
  return {
    limitsRequests: requests !== undefined,
    limitsCalls: limitsServers || settings.maxConcurrentCalls !== undefined,
    async chargeRequests(principal, cost) {
      if (!requests || cost <= 0) return undefined;
      const take = await deps.buckets.take(`req:${principal}`, requests, cost);
      return take.ok ? undefined : rateLimitedError({ limit: `${KEY}.requestsPerMinute`, retryAfterMs: take.retryAfterMs, what: 'requests' });
    },
    async admitCall(call) {
      const release = await holdConcurrent(settings.maxConcurrentCalls, call, deps);
      const bucket = call.continues ? undefined : serverRule(call.backend);
      if (!bucket) return release;
      let take;
      try {
        take = await deps.buckets.take(`srv:${call.backend}:${call.principal}`, bucket.rule);
      } catch (e) {
        release();
        throw e;
      }
      if (take.ok) return release;
      release();
      throw rateLimitedError({ limit: bucket.limit, retryAfterMs: take.retryAfterMs, what: `calls to ${call.backend}`, server: call.backend });
    },
  };
}

/** Takes one unit of the principal's concurrent calls (a continuation is never refused); what gives it back, once. */
async function holdConcurrent(max: number | undefined, call: CallTicket, deps: RateLimitDeps): Promise<() => void> {
  if (max === undefined) return () => undefined;
  const key = `rate-calls:${call.principal}`;
  const limit = call.continues ? Number.MAX_SAFE_INTEGER : max;
  if (!(await deps.quotas.acquire([{ key, limit }]))) {
    throw rateLimitedError({ limit: `${KEY}.maxConcurrentCalls`, retryAfterMs: CONCURRENCY_RETRY_MS, what: 'concurrent calls' });
  }
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    background('give back a concurrent-call unit', deps.quotas.release([key]), deps.log);
  };
}
