/**
 * A front's request handler, counted: each request's method, outcome and duration go to the metrics
 * (observe/metrics.ts) when its work settles. Which front served it is the `front` label: `mcp` (the
 * 2026-07-28 endpoint), `draft` (the SEP-2322 draft dialect), `legacy` (2025-11-25 and 2024-11-05
 * client sessions). A request forwarded to another instance is counted where it is served.
 *
 * A legacy session's requests reach the dispatcher through the SDK's server, not through the HTTP
 * layer's request span (http/request-span.ts): `spanned` gives each its own server span.
 */
import type { Dialect, RequestContext } from '../fronts/dialect.js';
import type { CountRequestOf } from '../fronts/legacy/session-requests.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../observe/metrics.js';
import { errorOutcome, methodLabel, resultOutcome } from '../observe/metric-labels.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import { SpanKind, inSpan, requestAttributes, tracingOn } from '../util/tracing.js';

export type FrontLabel = 'mcp' | 'draft' | 'legacy';

type Handler<A extends unknown[]> = (req: FrontRequest, ctx: RequestContext, ...rest: A) => Promise<Record<string, unknown>>;

export function metered<A extends unknown[]>(front: FrontLabel, handle: Handler<A>, metrics: Metrics): Handler<A> {
  if (!metrics.enabled) return handle;
  return async (req, ctx, ...rest) => {
    const started = performance.now();
    const method = methodLabel(req.method);
    const seconds = (): number => (performance.now() - started) / 1000;
    try {
      const result = await handle(req, ctx, ...rest);
      metrics.exchange(front, method, resultOutcome(result), seconds(), ctx.principal);
      return result;
    } catch (e) {
      metrics.exchange(front, method, (ctx.end ?? ctx.signal).aborted ? 'client_gone' : errorOutcome(e), seconds(), ctx.principal);
      throw e;
    }
  };
}

/**
 * Counts a legacy session's request that its front answered without `metered` seeing it (`initialize`,
 * `ping`, `logging/setLevel`, a subscription, a method no backend offers), as `metered` counts the
 * others; undefined without metrics.
 */
export function countingOthers(front: FrontLabel, metrics: Metrics): CountRequestOf | undefined {
  if (!metrics.enabled) return undefined;
  return (method, outcome, seconds, principal) => {
    const label = outcome.error !== undefined ? errorOutcome(outcome.error) : resultOutcome((outcome.result ?? {}) as Record<string, unknown>);
    metrics.exchange(front, methodLabel(method), label, seconds, principal);
  };
}

/**
 * The dialect, its open `subscriptions/listen` streams counted in `tally.open` (attached until detached
 * or ended), and each stream, as any request, logged in one `mcp` line and counted (`observed`) when it
 * ends: `complete` when the gateway ended it (shutting down), `client_gone` when its client closed it,
 * the error's reason when it was refused.
 */
export function countingListens(dialect: Dialect, tally: { open: number }, observed?: { front: FrontLabel; metrics: Metrics; logger: Logger }): Dialect {
  const METHOD = 'subscriptions/listen';
  return {
    ...dialect,
    listen: async (request, ctx) => {
      const started = performance.now();
      const ended = (outcome: string): void => {
        if (!observed) return;
        const ms = Math.round(performance.now() - started);
        observed.metrics.exchange(observed.front, METHOD, outcome, ms / 1000, ctx.principal);
        const line = { method: METHOD, principal: ctx.principal, ms };
        observed.logger.info(outcome === 'complete' ? { ...line, resultType: outcome } : { ...line, reason: outcome }, 'mcp');
      };
      let session: Awaited<ReturnType<Dialect['listen']>>;
      try {
        session = await dialect.listen(request, ctx);
      } catch (e) {
        ended(errorOutcome(e));
        throw e;
      }
      return {
        ...session,
        attach(send, onEnd) {
          tally.open += 1;
          let counted = true;
          const leave = (outcome: string): void => {
            if (counted) {
              tally.open -= 1;
              ended(outcome);
            }
            counted = false;
          };
          const detach = session.attach(send, () => {
            leave('complete');
            onEnd();
          });
          return () => {
            leave('client_gone');
            detach();
          };
        },
      };
    },
  };
}

/** The handler, each request a server span `mcp <method>` (front, method, tool name, result type); without tracing, the handler itself. */
export function spanned<A extends unknown[]>(front: FrontLabel, handle: Handler<A>): Handler<A> {
  return (req, ctx, ...rest) => {
    if (!tracingOn()) return handle(req, ctx, ...rest);
    const attributes = { ...requestAttributes(req.method, req.params), 'mcp.front': front };
    return inSpan(`mcp ${methodLabel(req.method)}`, { kind: SpanKind.SERVER, attributes }, async (span) => {
      const result = await handle(req, ctx, ...rest);
      if (typeof result['resultType'] === 'string') span.setAttribute('mcp.result_type', result['resultType']);
      return result;
    });
  };
}
