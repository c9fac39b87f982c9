/**
 * A front's request handler, counted: each request's method, outcome and duration go to the metrics
 * (observe/metrics.ts) when its work settles. Which front served it is the `front` label: `mcp` (the
 * 2026-07-28 endpoint), `draft` (the SEP-2322 draft dialect), `legacy` (2025-11-25 and 2024-11-05
 * client sessions). A request forwarded to another instance is counted where it is served.
 */
import type { Dialect, RequestContext } from '../fronts/dialect.js';
import type { Metrics } from '../observe/metrics.js';
import { errorOutcome, methodLabel, resultOutcome } from '../observe/metric-labels.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';

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
      metrics.exchange(front, method, resultOutcome(result), seconds());
      return result;
    } catch (e) {
      metrics.exchange(front, method, ctx.signal.aborted ? 'client_gone' : errorOutcome(e), seconds());
      throw e;
    }
  };
}

/** The dialect, its open `subscriptions/listen` streams counted in `tally.open` (attached until detached or ended). */
export function countingListens(dialect: Dialect, tally: { open: number }): Dialect {
  return {
    ...dialect,
    listen: async (request, ctx) => {
      const session = await dialect.listen(request, ctx);
      return {
        ...session,
        attach(send, onEnd) {
          tally.open += 1;
          let counted = true;
          const leave = (): void => {
            if (counted) tally.open -= 1;
            counted = false;
          };
          const detach = session.attach(send, () => {
            leave();
            onEnd();
          });
          return () => {
            leave();
            detach();
          };
        },
      };
    },
  };
}
