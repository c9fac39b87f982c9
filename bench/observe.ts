/**
 * What observing the gateway costs: its CPU time per pass-through call with metrics off (no
 * `gateway.admin`), with metrics on (`gateway.admin`, counted on every request), and with tracing on
 * (the OTLP/HTTP exporter sampling every request, sent to a local sink that reads and drops them).
 * Each is its own gateway process, measured alternately; medians of CPU ms per 1k calls.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpuTimeMs, runLoad } from './measure.js';

export interface ObserveDeps {
  start(file: Record<string, unknown>, env: Record<string, string>): Promise<{ url: string; pid: number; stop(): Promise<void> }>;
  call(url: string): Promise<void>;
  readonly config: Record<string, unknown>;
  readonly repeats: number;
  readonly total: number;
  readonly warmup: number;
}

export interface ObserveFigures {
  /** Median gateway CPU ms per 1k pass-through calls (16 B, conc. 16). */
  readonly off: number;
  readonly metrics: number;
  readonly tracing: number;
  /** Spans the sink received (0 would mean tracing never turned on). */
  readonly exportedRequests: number;
}

/** An OTLP/HTTP endpoint on 127.0.0.1 that reads each export and answers it empty. */
async function otlpSink(): Promise<{ url: string; received: () => number; server: Server }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received: () => received, server };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function observeOverhead(deps: ObserveDeps): Promise<ObserveFigures> {
  const sink = await otlpSink();
  const gateway = (deps.config['gateway'] ?? {}) as Record<string, unknown>;
  const tracingEnv = {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  };
  const systems = {
    off: await deps.start(deps.config, {}),
    metrics: await deps.start({ ...deps.config, gateway: { ...gateway, admin: { port: 0 } } }, {}),
    tracing: await deps.start(deps.config, tracingEnv),
  };
  const cpu: Record<keyof typeof systems, number[]> = { off: [], metrics: [], tracing: [] };
  try {
    for (let rep = 0; rep < deps.repeats; rep++) {
      for (const [name, gw] of Object.entries(systems) as [keyof typeof systems, (typeof systems)['off']][]) {
        await runLoad(() => deps.call(gw.url), { concurrency: 16, total: deps.warmup, warmup: 0 });
        const before = cpuTimeMs(gw.pid);
        const r = await runLoad(() => deps.call(gw.url), { concurrency: 16, total: deps.total, warmup: 0 });
        const after = cpuTimeMs(gw.pid);
        if (before !== undefined && after !== undefined) cpu[name].push(((after - before) / r.calls) * 1000);
      }
    }
  } finally {
    await Promise.all(Object.values(systems).map((s) => s.stop()));
    await new Promise((r) => sink.server.close(r));
  }
  return { off: median(cpu.off), metrics: median(cpu.metrics), tracing: median(cpu.tracing), exportedRequests: sink.received() };
}
