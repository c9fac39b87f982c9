/**
 * How a request learns that its client went away. On Node (@hono/node-server, whose bindings are the
 * request's `incoming` and `outgoing`), one AbortController per answer, aborted when the response
 * closes before it was written whole: what the adapter's own `req.signal` does, without that signal
 * and the second controller that would be linked to it (issue 30: each costs a pass-through call an
 * EventTarget, a listener and an abort event). Elsewhere (the edge, a test's `app.request`), a
 * controller linked to the request's signal.
 */
import { linkedController } from '../util/abort.js';

/** The part of Node's `ServerResponse` this reads (no import of node:http here: the edge bundles this file). */
interface NodeOutgoing {
  readonly writableFinished: boolean;
  readonly closed?: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** An answer's controller, and how to let go of what links it (once the work settled). */
export interface AnswerLife {
  readonly controller: AbortController;
  dispose(): void;
}

/** Why the answer's work is aborted when the connection closed first (as the Node adapter says it). */
const GONE = 'Client connection prematurely closed.';
/** Nothing to let go of: the controller is linked to nothing but the response's own `close`. */
const NOTHING = (): void => undefined;

function isNodeOutgoing(value: unknown): value is NodeOutgoing {
  return typeof value === 'object' && value !== null && typeof (value as { once?: unknown }).once === 'function' && 'writableFinished' in value;
}

/**
 * What `answerLife` needs of a route's context: the runtime bindings (`c.env`) and the request.
 * Returns a factory, called only by a handler that runs work for the answer.
 */
export function answerLifeOf(env: unknown, req: Request): () => AnswerLife {
  const outgoing = (env as { outgoing?: unknown } | undefined)?.outgoing;
  if (!isNodeOutgoing(outgoing)) return () => linkedController(req.signal);
  return () => {
    const controller = new AbortController();
    if (outgoing.closed === true) {
      if (!outgoing.writableFinished) controller.abort(GONE);
    } else {
      outgoing.once('close', () => {
        if (!outgoing.writableFinished) controller.abort(GONE);
      });
    }
    return { controller, dispose: NOTHING };
  };
}
