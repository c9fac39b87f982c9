/**
 * `subscriptions/listen` (basic/patterns/subscriptions.mdx): a long-lived stream of the list-changed
 * notifications the client opted into. The first message acknowledges the honoured subset; every
 * notification carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id;
 * when the gateway shuts down it ends the stream with a final result. Only list changes a backend
 * announces are honoured (resource subscriptions are not offered).
 */
import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { Quotas } from '../../cluster/quotas.js';
import type { Catalog } from '../../core/catalog.js';
import type { EventBus, ListChange } from '../../core/events.js';
import { invalidParams } from '../../errors.js';
import { META, type FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import type { ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import type { ListenSession, RequestContext } from '../dialect.js';
import { gatewayCapabilities } from './capabilities.js';

const FILTER: Record<ListChange, string> = { tools: 'toolsListChanged', prompts: 'promptsListChanged', resources: 'resourcesListChanged' };

export interface ListenDeps {
  readonly catalog: Catalog;
  readonly events: EventBus;
  readonly stamp: ResultStamp;
  readonly quotas: Quotas;
  /** Open listen streams allowed per principal and in total (each holds a connection). */
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
}

export function createListen(deps: ListenDeps): (req: FrontRequest, ctx: RequestContext) => Promise<ListenSession> {
  return async (req, ctx) => {
    const requested = req.params['notifications'];
    if (requested !== undefined && (typeof requested !== 'object' || requested === null || Array.isArray(requested))) {
      throw invalidParams('params.notifications must be an object');
    }
    const want = (requested ?? {}) as Record<string, unknown>;
    const caps = await gatewayCapabilities(deps.catalog);
    const honoured = new Set<ListChange>();
    for (const kind of Object.keys(FILTER) as ListChange[]) {
      if (want[FILTER[kind]] === true && caps[kind]?.['listChanged'] === true) honoured.add(kind);
    }
    const tag = { [SUBSCRIPTION_ID_META_KEY]: req.id };
    const keys = [`listen:${ctx.principal}`, 'listen:*'];
    const held = await deps.quotas.acquire([
      { key: keys[0]!, limit: deps.maxPerPrincipal },
      { key: keys[1]!, limit: deps.maxTotal },
    ]);
    if (!held) throw invalidParams('Too many open subscriptions/listen streams: close one first', { reason: 'listen_limit' });
    const notifications: Record<string, boolean> = {};
    for (const kind of honoured) notifications[FILTER[kind]] = true;
    return {
      id: req.id,
      ack: { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications, _meta: tag } },
      final: { jsonrpc: '2.0', id: req.id, result: { resultType: 'complete', _meta: { ...tag, [META.serverInfo]: deps.stamp.serverInfo } } },
      attach(send, onEnd) {
        const offChange = deps.events.onListChanged((kind) => {
          if (honoured.has(kind)) send({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed`, params: { _meta: tag } });
        });
        const offClose = deps.events.onClose(onEnd);
        let released = false;
        return () => {
          offChange();
          offClose();
          if (!released) void deps.quotas.release(keys);
          released = true;
        };
      },
    };
  };
}
