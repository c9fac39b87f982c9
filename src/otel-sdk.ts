/**
 * The OpenTelemetry SDK, wired for the entry point only (issue 28; import rules: test/helpers/import-graph.ts):
 * off unless the standard `OTEL_*` variables turn it on, then spans go to an OTLP/HTTP collector as
 * JSON, batched, through a tracer provider with the AsyncLocalStorage context manager (the active span
 * follows every await: log lines and outgoing requests find it) and the W3C trace-context propagator
 * (no baggage: nothing a client sends rides on to the backends but its trace). The code below the entry
 * point uses the API only (util/tracing.ts).
 *
 * On: `OTEL_TRACES_EXPORTER=otlp`, or an endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as is, or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; default http://localhost:4318/v1/traces). Off:
 * `OTEL_SDK_DISABLED=true` (wins), `OTEL_TRACES_EXPORTER=none`, or none of the above. Sampling:
 * `OTEL_TRACES_SAMPLER` (`parentbased_always_on` by default) and `OTEL_TRACES_SAMPLER_ARG`. The exporter
 * reads its own `OTEL_EXPORTER_OTLP_*HEADERS`, `*TIMEOUT` and `*COMPRESSION`.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

/** What the `OTEL_*` variables ask for, when they turn tracing on. */
export interface TracingConfig {
  /** Where spans go (OTLP/HTTP, JSON). */
  readonly url: string;
  readonly serviceName: string;
  readonly serviceVersion: string;
  /** `service.instance.id` (the cluster instance id, when configured). */
  readonly instanceId?: string | undefined;
  readonly sampler: string;
  /** The sampler's ratio (`traceidratio`, `parentbased_traceidratio`), 0..1. */
  readonly ratio: number;
  /** How long spans wait to be sent in a batch (default 5,000 ms; `OTEL_BSP_SCHEDULE_DELAY`). */
  readonly batchDelayMs?: number | undefined;
}

/** The running SDK: flushes on demand, and flushes and stops on shutdown (the global API is then off again). */
export interface Tracing {
  readonly config: TracingConfig;
  flush(): Promise<void>;
  /** Sends what is buffered, stops, and unregisters the globals. Idempotent. */
  shutdown(): Promise<void>;
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];

/**
 * The tracing `env` asks for: a config when it turns tracing on, and notes for the log (what was
 * ignored and why). Never throws; a value it cannot use falls back to the default with a note.
 */
export function tracingConfigFrom(
  env: Readonly<Record<string, string | undefined>>,
  service: { name: string; version: string; instanceId?: string | undefined },
): { config?: TracingConfig; notes: string[] } {
  const notes: string[] = [];
  const get = (name: string): string | undefined => env[name]?.trim() || undefined;
  if (get('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return { notes };
  const exporters = (get('OTEL_TRACES_EXPORTER') ?? '').split(',').map((s) => s.trim().toLowerCase());
  const endpoint = get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? withTracesPath(get('OTEL_EXPORTER_OTLP_ENDPOINT'));
  if (exporters.includes('none')) return { notes };
  const unsupported = exporters.filter((e) => e !== '' && e !== 'otlp');
  if (unsupported.length) notes.push(`OTEL_TRACES_EXPORTER: only otlp is supported (ignored: ${unsupported.join(', ')})`);
  if (!exporters.includes('otlp') && endpoint === undefined) return { notes };
  const protocol = get('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? get('OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined && protocol !== 'http/json') notes.push(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: spans are sent as http/json`);
  let sampler = get('OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on';
  if (!SAMPLERS.includes(sampler)) {
    notes.push(`OTEL_TRACES_SAMPLER=${sampler} is not supported: using parentbased_always_on`);
    sampler = 'parentbased_always_on';
  }
  const arg = get('OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1)) notes.push(`OTEL_TRACES_SAMPLER_ARG=${arg} is not a ratio in [0, 1]: using 1`);
  const delay = get('OTEL_BSP_SCHEDULE_DELAY');
  const config: TracingConfig = {
    url: endpoint ?? 'http://localhost:4318/v1/traces',
    serviceName: get('OTEL_SERVICE_NAME') ?? service.name,
    serviceVersion: service.version,
    instanceId: service.instanceId,
    sampler,
    ratio: ratio >= 0 && ratio <= 1 ? ratio : 1,
    batchDelayMs: delay !== undefined && Number(delay) >= 0 ? Number(delay) : undefined,
  };
  return { config, notes };
}

/** `OTEL_EXPORTER_OTLP_ENDPOINT` names the collector's base: traces go to its `/v1/traces`. */
function withTracesPath(base: string | undefined): string | undefined {
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`;
}

function samplerOf(config: TracingConfig): Sampler {
  const root = config.sampler.endsWith('always_off')
    ? new AlwaysOffSampler()
    : config.sampler.endsWith('traceidratio')
      ? new TraceIdRatioBasedSampler(config.ratio)
      : new AlwaysOnSampler();
  return config.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

/**
 * Starts the SDK with `config` and registers it with the API (tracer provider, context manager,
 * propagator): from now on util/tracing.ts records. One at a time per process; `shutdown` undoes it.
 */
export function startTracing(config: TracingConfig): Tracing {
  const attributes: Record<string, string> = { 'service.name': config.serviceName, 'service.version': config.serviceVersion };
  if (config.instanceId !== undefined) attributes['service.instance.id'] = config.instanceId;
  const exporter = new OTLPTraceExporter({ url: config.url });
  const processor = new BatchSpanProcessor({ exporter, ...(config.batchDelayMs !== undefined ? { scheduledDelayMillis: config.batchDelayMs } : {}) });
  const provider = new TracerProvider({ resource: resourceFromAttributes(attributes), sampler: samplerOf(config), spanProcessors: [processor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  let stopped: Promise<void> | undefined;
  return {
    config,
    flush: () => provider.forceFlush(),
    shutdown() {
      stopped ??= provider.shutdown().finally(() => {
        trace.disable();
        propagation.disable();
        context.disable();
      });
      return stopped;
    },
  };
}
