/**
 * `await_activity` (seed 001, "Await Activity Implementation"): returns at once when events wait for
 * delivery, else waits for the scope's next event or its timeout (holding one of the principal's fair
 * shares of waits), then reports the events by server, the working tasks by server (category 3), the
 * pending client actions (category 4) and the cursor of the last event delivered.
 */
import { limitError } from '../../errors.js';
import { abortReason, anySignal } from '../../util/abort.js';
import { background } from '../../util/background.js';
import type { Handler, HandlerDeps, ToolCtx } from './handler-deps.js';
import { ToolError, TOOL_ERRORS, pendingClientAction } from './respond.js';
import type { ProxyEvent } from './scope-events.js';
import { pendingServer } from './task-tools.js';

/**
 * Waits for the scope's next event, at most `timeoutMs`, holding one of the principal's await shares
 * (a refused share is a TOOL_ERR_LIMIT tool error naming the bound). Ends at once, with its timer gone
 * and its share given back, when the call is cancelled (rejects) or its client's connection closes.
 */
async function waitForActivity(deps: HandlerDeps, ctx: ToolCtx, timeoutMs: number): Promise<'event' | 'timeout' | 'client_gone'> {
  const { maxAwaitPerPrincipal, maxAwaitTotal } = deps.settings;
  const held = await deps.shares.take(ctx.call.principal, { kind: 'await', perPrincipal: maxAwaitPerPrincipal, total: maxAwaitTotal });
  if (!held.ok) {
    const own = held.whose === 'principal';
    const limit = own ? 'gateway.proxyTools.maxAwaitPerPrincipal' : 'gateway.proxyTools.maxAwaitTotal';
    const max = own ? maxAwaitPerPrincipal : maxAwaitTotal;
    deps.logger.info({ principal: ctx.call.principal, limit }, 'await_activity refused: limit reached');
    // The same refusal as every other fair share, as a tool error.
    const refused = limitError({ whose: held.whose, what: 'await_activity calls', limit, max, free: 'let one return (or cancel it) before starting another' });
    throw new ToolError(TOOL_ERRORS.LIMIT, refused.message, refused.data as Record<string, unknown>);
  }
  const connection = ctx.call.connection;
  const timer = new AbortController();
  const t = setTimeout(() => timer.abort(), timeoutMs);
  t.unref?.();
  try {
    await ctx.scope.events.next(anySignal([ctx.call.signal, timer.signal, ...(connection ? [connection] : [])]));
    return 'event';
  } catch {
    if (ctx.call.signal.aborted) throw abortReason(ctx.call.signal);
    return connection?.aborted ? 'client_gone' : 'timeout';
  } finally {
    clearTimeout(t);
    background('release an await_activity share', held.release(), deps.logger);
  }
}

export const ACTIVITY_HANDLERS = {
  async await_activity(deps, ctx, args) {
    const { scope } = ctx;
    const timeoutMs = Math.min(deps.settings.maxAwaitTimeoutMs, (args['timeout_ms'] as number | undefined) ?? deps.settings.awaitTimeoutMs);
    let triggers: Record<string, unknown>[];
    if (scope.events.hasNew) triggers = [{ type: 'immediate' }];
    else {
      const woke = await waitForActivity(deps, ctx, timeoutMs);
      // Nobody reads this answer now (unless the client resumes its stream): the events stay for the next one.
      if (woke === 'client_gone') return { triggers: [{ type: 'client_gone' }], events: [] };
      triggers = woke === 'timeout' ? [{ type: 'timeout' }] : [];
    }
    const { events, missed } = scope.events.takeNew();
    if (triggers.length === 0) {
      for (const e of events)
        triggers.push(
          e.type === 'server_disconnected' ? { type: 'server_disconnected', server: e.server } : { type: 'event', server: e.server, eventType: e.type },
        );
    }
    const byServer = new Map<string, ProxyEvent[]>();
    for (const e of events) {
      if (!byServer.has(e.server)) byServer.set(e.server, []);
      byServer.get(e.server)!.push(e);
    }
    return {
      triggers,
      events: [...byServer].map(([server, list]) => ({ server, events: list })),
      ...(missed > 0 ? { events_missed: missed } : {}),
      pending_server: pendingServer(deps, ctx),
      pending_client: pendingClientAction(deps.tracker.actions(scope)),
      ...(events.length > 0 ? { lastEventId: events.at(-1)!.id } : {}),
    };
  },
} satisfies Record<'await_activity', Handler>;
