/**
 * Tracing through the OpenTelemetry API (issue 28): the gateway's spans, and the W3C `traceparent`
 * that carries a trace from one process (or one round of a call) to the next. Only the API is used
 * here; the SDK that records and exports spans is wired by the entry point alone (otel-sdk.ts), and
 * without it every function here is a cheap no-op (non-recording spans, no `traceparent`).
 *
 * Spans carry names, ids, counts, codes and reasons only: never an argument value, an answer, a
 * requestState, a key or a token.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, isSpanContextValid, propagation, trace } from '@opentelemetry/api';
import type { Attributes, Context, Link, Span } from '@opentelemetry/api';

export { SpanKind };
export type { Attributes, Context, Span };

const TRACER = 'mcp-mrtr-gateway';
const TRACEPARENT = 'traceparent';

/** What a new span is: its kind (default internal), attributes, links to other traces. */
export interface SpanOptions {
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
  readonly links?: Link[];
}

/** True when an SDK is set up (its propagator writes `traceparent`): the tracing that costs something runs only then. */
export function tracingOn(): boolean {
  return propagation.fields().includes(TRACEPARENT);
}

/** Starts `name` as a child of `parent` (default: the active context); the span and the context it is active in. */
export function startSpan(name: string, options: SpanOptions = {}, parent: Context = context.active()): { span: Span; context: Context } {
  const span = trace
    .getTracer(TRACER)
    .startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes ?? {}, links: options.links ?? [] }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * Runs `fn` inside a new child span of the active context and ends the span when `fn`'s promise
 * settles: a rejection marks the span failed (its code or reason, never its message) and is rethrown.
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const started = startSpan(name, options);
  try {
    return await context.with(started.context, () => fn(started.span));
  } catch (e) {
    markFailed(started.span, e);
    throw e;
  } finally {
    started.span.end();
  }
}

const REASON = /^[a-z][a-z_]{0,47}$/;

/** A request span's attributes: its method, and the tool or prompt it names (clipped; never arguments). */
export function requestAttributes(method: string, params: Readonly<Record<string, unknown>>): Attributes {
  const attributes: Attributes = { 'mcp.method': method };
  const name = params['name'];
  if (typeof name === 'string' && method === 'tools/call') attributes['mcp.tool'] = name.slice(0, 200);
  if (typeof name === 'string' && method === 'prompts/get') attributes['mcp.prompt'] = name.slice(0, 200);
  return attributes;
}

/**
 * Marks `span` failed by what `error` says about itself without data: a JSON-RPC code, a gateway
 * error code or `data.reason`, a client that went away. Never the message (it may echo a value).
 */
export function markFailed(span: Span, error: unknown, extra: Attributes = {}): void {
  if (!span.isRecording()) return;
  const e = error as { code?: unknown; data?: { reason?: unknown } } | null;
  const attributes: Attributes = { ...extra };
  if (typeof e?.code === 'number') attributes['mcp.error.code'] = e.code;
  const given = typeof e?.data?.reason === 'string' ? e.data.reason : typeof e?.code === 'string' ? e.code : undefined;
  // A backend chooses its errors' data: only a reason shaped as the gateway's own (a snake_case word) is kept.
  const reason = given !== undefined && REASON.test(given) ? given : undefined;
  if (reason !== undefined && attributes['mcp.error.reason'] === undefined) attributes['mcp.error.reason'] = reason;
  span.setAttributes(attributes);
  const said = attributes['mcp.error.reason'] ?? attributes['mcp.error.code'];
  span.setStatus({ code: SpanStatusCode.ERROR, message: said === undefined ? (error instanceof Error ? error.name : 'error') : String(said) });
}

/** The W3C `traceparent` of `ctx` (default: the active context), or undefined without tracing or a span. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier[TRACEPARENT];
}

/** `base` (default: the root context) with the remote span a `traceparent` names, when it names one. */
export function contextOf(traceparent: string | null | undefined, base: Context = ROOT_CONTEXT): Context {
  return traceparent ? propagation.extract(base, { [TRACEPARENT]: traceparent }) : base;
}

/** The span context a `traceparent` names, as a link to put on a span of another trace; undefined when it names none. */
export function linkTo(traceparent: string | null | undefined): Link | undefined {
  const remote = trace.getSpanContext(contextOf(traceparent));
  return remote && isSpanContextValid(remote) ? { context: remote } : undefined;
}

/** Sets `traceparent` on `headers` to the active context's (an outgoing request continues the trace); leaves them alone without tracing. */
export function injectTraceparent(headers: Headers, ctx: Context = context.active()): void {
  const value = traceparentOf(ctx);
  if (value !== undefined) headers.set(TRACEPARENT, value);
}

/** The active span's trace and span ids, for a log line (pino's `mixin`); empty outside a span or without tracing. */
export function traceFields(): { traceId?: string; spanId?: string } {
  const active = trace.getSpanContext(context.active());
  return active && isSpanContextValid(active) ? { traceId: active.traceId, spanId: active.spanId } : {};
}

/** Runs `fn` outside any trace: what it starts that lives on (a process, a stream) belongs to no request. */
export function outsideTraces<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/** Runs `fn` with `ctx` active (its awaits and callbacks stay in it). */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}
