/**
 * How a request learns that its client went away. On Node (@hono/node-server, whose bindings are the
 * request's `incoming` and `outgoing`), one lifeline per answer (util/lifeline.ts), ended when the
 * response closes before it was written whole: what the adapter's own `req.signal` does, without that
 * signal (issue 30: a pass-through call paid for an AbortSignal, its listeners and its abort event;
 * the lifeline makes one only when something asks for it). Elsewhere (the edge, a test's
 * `app.request`), a lifeline linked to the request's signal.
 */
import { Lifeline } from '../util/lifeline.js';

/** The part of Node's `ServerResponse` this reads (no import of node:http here: the edge bundles this file). */
interface NodeOutgoing {
  readonly writableFinished: boolean;
  readonly closed?: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** An answer's lifeline, and how to let go of what links it (once the work settled). */
export interface AnswerLife {
  readonly life: Lifeline;
  dispose(): void;
}

/** Why the answer's work is aborted when the connection closed first (as the Node adapter says it). */
const GONE = 'Client connection prematurely closed.';
/** Nothing to let go of: the lifeline is linked to nothing but the response's own `close`. */
const NOTHING = (): void => undefined;

function isNodeOutgoing(value: unknown): value is NodeOutgoing {
  return typeof value === 'object' && value !== null && typeof (value as { once?: unknown }).once === 'function' && 'writableFinished' in value;
}

/**
 * What `answerLife` needs of a route's context: the runtime bindings (`c.env`) and the request.
 * Returns a factory, called only by a handler that runs work for the answer; it makes the answer's
 * lifeline once (a forward that fell back to serving here and the work served then share it).
 */
export function answerLifeOf(env: unknown, req: Request): () => AnswerLife {
  const outgoing = (env as { outgoing?: unknown } | undefined)?.outgoing;
  let made: AnswerLife | undefined;
  if (!isNodeOutgoing(outgoing)) return () => (made ??= linkedAnswerLife(req.signal));
  return () => (made ??= nodeAnswerLife(outgoing));
}

/** The lifeline of an answer on Node: ended when its response closes before it was written whole. */
function nodeAnswerLife(outgoing: NodeOutgoing): AnswerLife {
  const life = new Lifeline();
  if (outgoing.closed === true) {
    if (!outgoing.writableFinished) life.abort(GONE);
  } else {
    outgoing.once('close', () => {
      if (!outgoing.writableFinished) life.abort(GONE);
    });
  }
  return { life, dispose: NOTHING };
}

/** An answer's lifeline that ends when `signal` aborts, until disposed. */
export function linkedAnswerLife(signal: AbortSignal): AnswerLife {
  const life = new Lifeline();
  if (signal.aborted) {
    life.abort(signal.reason);
    return { life, dispose: NOTHING };
  }
  const onAbort = (): void => life.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  return { life, dispose: () => signal.removeEventListener('abort', onAbort) };
}
