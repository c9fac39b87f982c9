/**
 * A 2026-07-28 backend's list changes, followed on a `subscriptions/listen` stream of its own (for an
 * edge handler's listen stream: an isolate shares nothing between requests, so each stream follows the
 * backends itself). Resolves once the backend acknowledged the stream, or could not open it (logged);
 * `follow.onEnd` when the backend ends a stream it had acknowledged, so the caller's ends too and its
 * client listens again.
 */
import type { Logger } from '../../log.js';
import type { ListChange } from '../events.js';
import type { UpstreamFollow } from './port.js';

const LIST_CHANGED = /^notifications\/(tools|prompts|resources)\/list_changed$/;

export interface ListStream {
  readonly kinds: ReadonlySet<ListChange>;
  /** Aborts the stream (the caller's stream ended). */
  readonly signal: AbortSignal;
  readonly follow: UpstreamFollow;
  readonly log: Logger;
  /** Sends the listen request with `params`; resolves when its stream ends, each notification to `onnotification`. */
  open(params: Record<string, unknown>, onnotification: (message: Record<string, unknown>) => void): Promise<unknown>;
  /** A list of the backend changed. */
  onChange(kind: ListChange): void;
}

export function followListStream(stream: ListStream): Promise<void> {
  const { signal, follow } = stream;
  const notifications: Record<string, boolean> = {};
  for (const kind of stream.kinds) notifications[`${kind}ListChanged`] = true;
  let acknowledged = false;
  let settle!: () => void;
  const ack = new Promise<void>((r) => (settle = r));
  const followed = stream.open({ notifications }, (message) => {
    const m = LIST_CHANGED.exec(String(message['method']));
    if (m) stream.onChange(m[1] as ListChange);
    else if (message['method'] === 'notifications/subscriptions/acknowledged') {
      acknowledged = true;
      settle();
    }
  });
  followed.then(
    () => {
      if (acknowledged && !signal.aborted) follow.onEnd?.();
      settle();
    },
    (e: unknown) => {
      if (signal.aborted) return settle();
      stream.log.warn({ err: (e as Error).message }, "could not follow the backend's list changes");
      if (acknowledged) follow.onEnd?.();
      settle();
    },
  );
  return ack;
}
