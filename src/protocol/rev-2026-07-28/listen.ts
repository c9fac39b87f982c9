/**
 * `subscriptions/listen` (basic/patterns/subscriptions.mdx): a long-lived stream of the list-changed
 * notifications the client opted into. The first message acknowledges the honoured subset; every
 * notification carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id;
 * when the gateway shuts down it ends the stream with a final result. Only list changes a backend
 * announces are honoured (resource subscriptions are not offered).
 */
import type { Catalog } from '../../core/catalog.js';
import type { EventBus, ListChange } from '../../core/events.js';
import { invalidParams } from '../../errors.js';
import { gatewayCapabilities } from './capabilities.js';
import { META, type FrontRequest, type RequestId } from './envelope.js';
import type { ResultStamp } from './results.js';

export const SUBSCRIPTION_ID_META = 'io.modelcontextprotocol/subscriptionId';

const FILTER: Record<ListChange, string> = { tools: 'toolsListChanged', prompts: 'promptsListChanged', resources: 'resourcesListChanged' };

export interface ListenSession {
  readonly id: RequestId;
  /** `notifications/subscriptions/acknowledged`, the first message. */
  readonly ack: Record<string, unknown>;
  /** Delivers matching notifications to `send` until detached; `onEnd` when the gateway closes. */
  attach(send: (message: Record<string, unknown>) => void, onEnd: () => void): () => void;
  /** The result that ends the stream on a graceful shutdown. */
  readonly final: Record<string, unknown>;
}

export function createListen(deps: { catalog: Catalog; events: EventBus; stamp: ResultStamp }): (req: FrontRequest) => Promise<ListenSession> {
  return async (req) => {
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
    const tag = { [SUBSCRIPTION_ID_META]: req.id };
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
        return () => {
          offChange();
          offClose();
        };
      },
    };
  };
}
