/**
 * The event bus of an instance in a cluster: what a backend announces here (a list changed, a resource
 * was updated) goes out through the cluster's fan-out, and what any instance sends comes back into this
 * instance's own bus, so every listener (a `subscriptions/listen` stream, a legacy session, a proxy
 * tools scope) hears it once whichever instance it is connected to. Several instances connected to the
 * same backend (one reached by URL) all see its announcement: the fan-out's `once` makes that one
 * event. A backend each instance runs itself (a process over stdio) is one of its own: its
 * announcements are each instance's own events, sent as they are. A backend's
 * connection changes stay on the instance whose link they describe. When Redis cannot be reached the
 * event is still delivered here.
 */
import { createHash } from 'node:crypto';
import type { Fanout, FanoutMessage } from '../cluster/fanout.js';
import type { EventBus, ListChange } from './events.js';

export interface ClusterEventsOptions {
  /** How long observations of one announcement by several instances count as one event. */
  readonly windowMs: number;
  /** True for a backend every instance reaches as the same server (by URL), false for one each runs itself. */
  readonly sameOnEveryInstance: (backend: string) => boolean;
  readonly onError: (e: Error) => void;
}

const KINDS: ReadonlySet<string> = new Set<ListChange>(['tools', 'prompts', 'resources']);

/** Puts a message any instance sent into the local bus (one that is not an event of ours is ignored). */
function deliver(local: EventBus, m: FanoutMessage): void {
  if (typeof m['backend'] !== 'string') return;
  if (m['t'] === 'list' && typeof m['kind'] === 'string' && KINDS.has(m['kind'])) local.emitListChanged(m['kind'] as ListChange, m['backend']);
  else if (m['t'] === 'resource' && typeof m['uri'] === 'string') local.emitResourceUpdated(m['uri'], m['backend']);
}

/** `local`'s listeners, with announcements fanned out through `fanout`; resolves once this instance listens. */
export async function clusterEventBus(local: EventBus, fanout: Fanout, opts: ClusterEventsOptions): Promise<EventBus> {
  const stop = await fanout.listen((m) => deliver(local, m));
  const send = (message: FanoutMessage, key: string): void => {
    const backend = String(message['backend']);
    fanout.publish(message, opts.sameOnEveryInstance(backend) ? { key, windowMs: opts.windowMs } : undefined).catch((e: unknown) => {
      opts.onError(e as Error);
      deliver(local, message);
    });
  };
  return {
    onListChanged: (l) => local.onListChanged(l),
    onResourceUpdated: (l) => local.onResourceUpdated(l),
    onConnection: (l) => local.onConnection(l),
    onClose: (l) => local.onClose(l),
    emitListChanged: (kind, backend) => send({ t: 'list', kind, backend }, `list:${backend}:${kind}`),
    emitResourceUpdated: (uri, backend) => send({ t: 'resource', uri, backend }, `resource:${backend}:${createHash('sha256').update(uri).digest('hex')}`),
    emitConnection: (change, backend) => local.emitConnection(change, backend),
    close() {
      stop().catch((e: unknown) => opts.onError(e as Error));
      local.close();
    },
  };
}
