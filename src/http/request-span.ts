/**
 * The server span of one request on a dialect path (issue 28, tracing; off without the SDK): `mcp
 * <method>`, with the method, the tool or prompt name, whether it retries a round and whether another
 * instance forwarded it; once its work settles, the result type, or the error's code and reason (never
 * a message, an argument, an answer or a requestState).
 *
 * Its parent: for a request another instance forwarded, that instance's forward span (the forward's
 * `traceparent`, covered by its signature); for a retry, the trace its requestState sealed (the call's
 * first request span, so the rounds of one call form one trace whichever instance serves them), with
 * the client's own `traceparent` as a link when it names another trace; otherwise the client's
 * `traceparent`, when it sent one, else a new trace.
 */
import { toWireError } from '../errors.js';
import { methodLabel } from '../observe/metric-labels.js';
import type { Dialect } from '../fronts/dialect.js';
import type { Logger } from '../log.js';
import type { FrontRequest } from '../protocol/rev-2026-07-28/envelope.js';
import { background } from '../util/background.js';
import { untilEnd } from '../util/stream-end.js';
import {
  type Attributes,
  type Context,
  SpanKind,
  contextOf,
  linkTo,
  markFailed,
  requestAttributes,
  startSpan,
  tracingOn,
  withContext,
} from '../util/tracing.js';
import type { Arrival } from './app-options.js';

export interface RequestSpan {
  /** Runs `fn` with the span active: what it logs carries the trace id, what it sends carries `traceparent`. */
  run<T>(fn: () => T): T;
  /** Ends the span when `work` settles, with its outcome; `signal` aborted means the client went away. */
  settle(work: Promise<Record<string, unknown>>, signal: { readonly aborted: boolean }, log: Logger): void;
  /** Ends the span once `res`'s body has passed through (a forwarded answer), or at once when it has none. */
  endWith(res: Response): Response;
  /** Ends the span now (an answer that is not the request's work: a listen stream's opening). */
  end(): void;
}

/** What a span reads of its request: its headers (a `Request` has them; so has a call that came on a channel). */
type HeadersOf = { readonly headers: { get(name: string): string | null } };

const UNTRACED: RequestSpan = { run: (fn) => fn(), settle: () => undefined, endWith: (res) => res, end: () => undefined };

/** Starts the request span of an admitted request (a no-op without tracing: then at once, no promise). */
export function startRequestSpan(
  dialect: Dialect,
  request: FrontRequest,
  principal: string,
  req: HeadersOf,
  arrival: Arrival,
): RequestSpan | Promise<RequestSpan> {
  return tracingOn() ? tracedSpan(dialect, request, principal, req, arrival) : UNTRACED;
}

async function tracedSpan(dialect: Dialect, request: FrontRequest, principal: string, req: HeadersOf, arrival: Arrival): Promise<RequestSpan> {
  const incoming = req.headers.get('traceparent');
  const retry = request.params['requestState'] !== undefined;
  const sealed = retry && !arrival.forwarded ? await dialect.traceOf?.(request, principal) : undefined;
  const link = sealed !== undefined ? linkTo(incoming) : undefined;
  const parent: Context = contextOf(sealed ?? incoming);
  const { span, context } = startSpan(
    // A bounded name: MCP's own methods, `other` for whatever a client made up (as the metrics do).
    `mcp ${methodLabel(request.method)}`,
    { kind: SpanKind.SERVER, attributes: attributesOf(request, retry, arrival), links: link ? [link] : [] },
    parent,
  );
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    span.end();
  };
  return {
    run: (fn) => withContext(context, fn),
    settle(work, signal, log) {
      const settled = work.then(
        (result) => {
          if (typeof result['resultType'] === 'string') span.setAttribute('mcp.result_type', result['resultType']);
          end();
        },
        (e: unknown) => {
          markFailed(span, signal.aborted ? e : toWireError(e), signal.aborted ? { 'mcp.error.reason': 'client_gone' } : {});
          end();
        },
      );
      background('end a request span', settled, log);
    },
    endWith(res) {
      span.setAttribute('http.response.status_code', res.status);
      if (!res.body || !span.isRecording()) {
        end();
        return res;
      }
      const body = untilEnd(res.body, end);
      return new Response(body, { status: res.status, headers: res.headers });
    },
    end,
  };
}

/**
 * Runs `fn` in the trace `req`'s `traceparent` names (the client's, or, for a request another instance
 * forwarded, that instance's forward span): a legacy session's request span, started by the front
 * beneath (gateway/metered.ts `spanned`), and a forward of it join that trace. Without tracing, or
 * without a `traceparent`, `fn` runs as it is (a request span then starts a trace of its own).
 */
export function inClientTrace<T>(req: Request, fn: () => T): T {
  const traceparent = tracingOn() ? req.headers.get('traceparent') : null;
  return traceparent ? withContext(contextOf(traceparent), fn) : fn();
}

/** What the span says of the request: its method, the tool or prompt it names, retry, forwarded. */
function attributesOf(request: FrontRequest, retry: boolean, arrival: Arrival): Attributes {
  return { ...requestAttributes(request.method, request.params), 'mcp.retry': retry, 'mcp.forwarded': arrival.forwarded };
}
