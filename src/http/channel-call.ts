/**
 * A call another instance forwarded on its channel to this one (gateway/forward-channel.ts;
 * spec/notes/cluster.md, "The channel"): a POST on a dialect path whose caller that instance's gate
 * already let in, served here as a forwarded POST (never forwarded again, not charged again), without
 * the HTTP front: the channel's key stands for the cluster secret, and the sender for its caller.
 */
import { WireCode } from '../errors.js';
import type { Caller } from '../fronts/dialect.js';
import type { AppOptions } from './app-options.js';
import type { AnswerLife } from './connection.js';
import { negotiate, serveAdmission } from './post.js';
import { refusal } from './replies.js';
import { parseJson } from './request-body.js';

/** One forwarded call, as its channel carries it. */
export interface ChannelCall {
  /** The public path it was sent to. */
  readonly path: string;
  readonly caller: Caller;
  /** The headers of the client's request that travel with a forward (by lower-case name). */
  readonly headers: { get(name: string): string | null };
  readonly body: string;
  /** Ended when the sender cancels the call (its client left) or the channel closes. */
  readonly life: AnswerLife;
}

/** The answer to `call`; a path that serves no dialect is refused (403), as on the internal path. */
export async function serveChannelCall(opts: AppOptions, call: ChannelCall): Promise<Response> {
  const dialect = opts.routes.get(call.path);
  if (!dialect) return refusal(WireCode.InvalidRequest, 'Forbidden: not a request forwarded by an instance of this cluster', 403);
  const incoming = {
    headers: call.headers,
    get signal() {
      return call.life.life.signal;
    },
  };
  const accepts = negotiate(incoming);
  if (accepts instanceof Response) return accepts;
  const parsed = parseJson(call.body);
  if (parsed instanceof Response) return parsed;
  const arrival = { path: call.path, forwarded: true, answerLife: () => call.life };
  return serveAdmission(opts, dialect, incoming, undefined, parsed, call.caller, opts.sessions?.has(call.path) ?? false, arrival, accepts);
}
