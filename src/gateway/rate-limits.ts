/**
 * Rate limits (`gateway.rateLimits`, off unless given) wired into the gateway: the buckets live in
 * Redis when the gateway is clustered (one script per take; redis/rate-buckets.ts), in this process
 * otherwise; the concurrent calls are counted on the same quotas seam as parked calls and tasks. Gives
 * the call engine its admission and the HTTP layer and the legacy HTTP+SSE front their request charge.
 */
import type { GatewaySettings } from '../config.js';
import type { Quotas } from '../cluster/quotas.js';
import { InMemoryRateBuckets, type RateBuckets } from '../cluster/rate-buckets.js';
import type { RedisCluster } from '../cluster/redis/cluster.js';
import type { CallAdmission } from '../core/calls/call-engine.js';
import type { ChargeRequests } from '../fronts/legacy/message-limit.js';
import { createRateLimits } from '../fronts/rate-limits.js';
import type { Logger } from '../log.js';
import type { Clock } from '../util/clock.js';

export interface GatewayRateLimits {
  /** For the call engine: set when calls are limited (per server, or in number). */
  readonly admit: CallAdmission | undefined;
  /** For the HTTP layer and the legacy HTTP+SSE messages: set when requests are limited. */
  readonly chargeRequests: ChargeRequests | undefined;
}

const NONE: GatewayRateLimits = { admit: undefined, chargeRequests: undefined };

/** The limits of `settings.rateLimits` (none without it); `buckets` overrides where the buckets live (tests). */
export function gatewayRateLimits(
  settings: Readonly<GatewaySettings>,
  deps: { cluster: RedisCluster | undefined; quotas: Quotas; clock: Clock; logger: Logger; buckets?: RateBuckets | undefined },
): GatewayRateLimits {
  if (!settings.rateLimits) return NONE;
  const buckets = deps.buckets ?? deps.cluster?.rateBuckets ?? new InMemoryRateBuckets(deps.clock.now);
  const limits = createRateLimits(settings.rateLimits, { buckets, quotas: deps.quotas, log: deps.logger });
  return {
    admit: limits.limitsCalls ? (call) => limits.admitCall(call) : undefined,
    chargeRequests: limits.limitsRequests ? (principal, cost) => limits.chargeRequests(principal, cost) : undefined,
  };
}
