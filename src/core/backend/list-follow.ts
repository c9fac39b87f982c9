/**
 * A 2026-07-28 backend's list changes, followed on a `subscriptions/listen` stream of its own (for an
 * edge handler's listen stream: an isolate shares nothing between requests, so each stream follows the
 * backends itself). Resolves once the backend acknowledged the stream, or could not open it; one it
 * could not open (the backend down, or refusing: its limit of listen streams reached; not a server
 * without `subscriptions/listen`, -32601, nor one refusing the params, -32602) is opened again,
 * after 1 s, then twice as long each time up to 30 s, for as long as the caller's stream lasts, and once
 * acknowledged it tells of a change of every kind (what changed while it was not followed is not known).
 * `follow.onEnd` when the backend ends a stream it had acknowledged, so the caller's ends too and its
 * client listens again.
 */
import { WireCode, isJsonRpcError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { sleep } from '../../util/abort.js';
import { background } from '../../util/background.js';
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
  /** The waits between tries to open the stream (tests shorten them). */
  readonly retry?: { readonly firstMs: number; readonly maxMs: number } | undefined;
}

const RETRY = { firstMs: 1_000, maxMs: 30_000 };

export function followListStream(stream: ListStream): Promise<void> {
  let settle!: () => void;
  const ack = new Promise<void>((r) => (settle = r));
  background("follow a backend's list changes", () => follow(stream, settle).finally(settle), stream.log);
  return ack;
}

/** Opens the stream until it is acknowledged (then follows it to its end) or the caller's stream ends. */
async function follow(stream: ListStream, settle: () => void): Promise<void> {
  const { signal, follow: followed, log } = stream;
  const { firstMs, maxMs } = stream.retry ?? RETRY;
  const notifications: Record<string, boolean> = {};
  for (const kind of stream.kinds) notifications[`${kind}ListChanged`] = true;
  let delayMs = firstMs;
  for (let tries = 1; !signal.aborted; tries++) {
    let acknowledged = false;
    let failure: unknown;
    try {
      await stream.open({ notifications }, (message) => {
        const m = LIST_CHANGED.exec(String(message['method']));
        if (m) stream.onChange(m[1] as ListChange);
        else if (message['method'] === 'notifications/subscriptions/acknowledged' && !acknowledged) {
          acknowledged = true;
          settle();
          // Not followed until now: any list may have changed meanwhile.
          if (tries > 1) for (const kind of stream.kinds) stream.onChange(kind);
        }
      });
    } catch (e) {
      failure = e;
    }
    if (signal.aborted) return;
    if (acknowledged) {
      if (failure !== undefined) log.warn({ err: (failure as Error).message }, "the backend's list-change stream broke; the listen stream ends");
      followed.onEnd?.();
      return;
    }
    if (refusedForGood(failure)) {
      log.warn({ err: (failure as Error).message }, 'the backend does not follow list changes on a stream; its lists are not followed on this listen stream');
      return;
    }
    const why = failure === undefined ? 'it ended before its acknowledgement' : (failure as Error).message;
    const line = { err: why, retryInMs: delayMs, tries };
    if (tries === 1) log.warn(line, "could not follow the backend's list changes; trying again while the listen stream lasts");
    else log.debug(line, "still cannot follow the backend's list changes");
    settle();
    await sleep(delayMs, signal).catch(() => undefined);
    delayMs = Math.min(delayMs * 2, maxMs);
  }
}

/** A JSON-RPC refusal no later try can change (no `subscriptions/listen` there, or not these params); anything else may pass later. */
function refusedForGood(e: unknown): boolean {
  const code = (e as { code?: unknown } | undefined)?.code;
  return isJsonRpcError(e) && (code === WireCode.MethodNotFound || code === WireCode.InvalidParams);
}
