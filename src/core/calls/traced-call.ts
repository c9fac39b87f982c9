/**
 * The spans of one backend call (issue 28, tracing; nothing without the SDK): `backend <method>`, a
 * client span under the request that started the call, lasting until the backend answers (across every
 * round of an MRTR call), with the backend, the method, the backend's own tool name and the outcome
 * kind; under it one `mcp input <method>` span per input request the backend makes (elicitation,
 * sampling, roots: the round it becomes), from the request until it is answered, refused or withdrawn.
 *
 * A backend's input request arrives on its session's transport, outside any request's context: its
 * span's parent is the call's span, named explicitly. Only names, kinds, codes and reasons are recorded.
 */
import type { BackendOutcome, CallChannel } from '../backend/port.js';
import { type Context, type Span, SpanKind, markFailed, startSpan, tracingOn, withContext } from '../../util/tracing.js';

/** What a call's span says of it. */
export interface TracedCall {
  readonly backend: string;
  readonly method: string;
  /** Params as the backend gets them: only `name` (the backend's own tool or prompt name) is read. */
  readonly params: Record<string, unknown>;
}

/** Runs `exec` (the backend call) inside the call's span, with a channel whose input requests get spans of their own. */
export function traceBackendCall(call: TracedCall, channel: CallChannel, exec: (channel: CallChannel) => Promise<BackendOutcome>): Promise<BackendOutcome> {
  if (!tracingOn()) return exec(channel);
  const attributes: Record<string, string> = { 'mcp.backend': call.backend, 'mcp.method': call.method };
  const name = call.params['name'];
  if (typeof name === 'string' && (call.method === 'tools/call' || call.method === 'prompts/get'))
    attributes[call.method === 'tools/call' ? 'mcp.tool' : 'mcp.prompt'] = name.slice(0, 200);
  const { span, context } = startSpan(`backend ${call.method}`, { kind: SpanKind.CLIENT, attributes });
  let running: Promise<BackendOutcome>;
  try {
    running = withContext(context, () => exec(tracedChannel(channel, context)));
  } catch (e) {
    running = Promise.reject(e);
  }
  return running.then(
    (outcome) => {
      span.setAttribute('mcp.result_type', outcome.kind);
      span.end();
      return outcome;
    },
    (e: unknown) => {
      failed(span, e);
      throw e;
    },
  );
}

/** `channel` with a span per input request, each a child of `parent` (the call's span). */
function tracedChannel(channel: CallChannel, parent: Context): CallChannel {
  return {
    id: channel.id,
    requestInput(method, params, signal, withdrawal) {
      const { span, context } = startSpan(`mcp input ${method}`, { attributes: { 'mcp.input.method': method } }, parent);
      return withContext(context, () => channel.requestInput(method, params, signal, withdrawal)).then(
        (answer) => {
          span.end();
          return answer;
        },
        (e: unknown) => {
          failed(span, e, signal.aborted ? { 'mcp.error.reason': 'withdrawn' } : {});
          throw e;
        },
      );
    },
    within: (fn) => withContext(parent, fn),
    progress: (update) => channel.progress(update),
    log: (params) => channel.log(params),
    notification: (method, params) => channel.notification(method, params),
    watchBackend: (activity) => channel.watchBackend?.(activity),
    relays: (call) => channel.relays?.(call),
    waitingSince: () => channel.waitingSince?.(),
    reclaim: (reason) => channel.reclaim?.(reason),
  } satisfies Required<CallChannel>;
}

function failed(span: Span, e: unknown, extra: Record<string, string> = {}): void {
  markFailed(span, e, extra);
  span.end();
}
