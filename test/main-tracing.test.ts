/**
 * Tracing as main.ts wires it (issue 28): the `OTEL_*` variables turn it on or leave it off
 * (`tracingConfigFrom`), and the CLI started with an OTLP endpoint sends its spans to a real OTLP/HTTP
 * receiver, the last of them flushed by its shutdown, its log lines of a request carrying the trace id.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracingConfigFrom } from '../src/otel-sdk.js';
import { nodeArgs } from './helpers/built.js';
import { startOtlpReceiver, type OtlpReceiver } from './helpers/otlp-receiver.js';
import { until } from './helpers/until.js';
import { post } from './helpers/wire.js';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const SERVICE = { name: 'mcp-mrtr-gateway', version: '1.2.3' };

describe('the OTEL variables', () => {
  it('leave tracing off without an exporter or endpoint, with OTEL_SDK_DISABLED=true, and with OTEL_TRACES_EXPORTER=none', () => {
    expect(tracingConfigFrom({}, SERVICE).config).toBeUndefined();
    expect(tracingConfigFrom({ OTEL_SERVICE_NAME: 'x' }, SERVICE).config).toBeUndefined();
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, SERVICE).config).toBeUndefined();
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, SERVICE).config).toBeUndefined();
  });

  it('turn it on with OTEL_TRACES_EXPORTER=otlp (default endpoint) or an endpoint; the traces endpoint is used as is', () => {
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp' }, SERVICE).config).toMatchObject({
      url: 'http://localhost:4318/v1/traces',
      serviceName: 'mcp-mrtr-gateway',
      serviceVersion: '1.2.3',
      sampler: 'parentbased_always_on',
      ratio: 1,
    });
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }, SERVICE).config?.url).toBe('http://c:4318/v1/traces');
    const both = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:9/traces', OTEL_SERVICE_NAME: 'gw-eu' };
    expect(tracingConfigFrom(both, SERVICE).config).toMatchObject({ url: 'http://t:9/traces', serviceName: 'gw-eu' });
  });

  it('take a sampler and its ratio, and note what they cannot use', () => {
    const ratio = tracingConfigFrom(
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' },
      SERVICE,
    );
    expect(ratio).toEqual({ config: expect.objectContaining({ sampler: 'parentbased_traceidratio', ratio: 0.25 }), notes: [] });
    const odd = tracingConfigFrom(
      { OTEL_TRACES_EXPORTER: 'otlp,zipkin', OTEL_TRACES_SAMPLER: 'jaeger_remote', OTEL_TRACES_SAMPLER_ARG: '2', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      SERVICE,
    );
    expect(odd.config).toMatchObject({ sampler: 'parentbased_always_on', ratio: 1 });
    expect(odd.notes).toHaveLength(4);
  });
});

describe('the CLI with tracing on', () => {
  let receiver: OtlpReceiver;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    // A test that failed before its SIGTERM leaves no process behind (the gateway ends its backends as it exits).
    const running = child && child.exitCode === null && child.signalCode === null ? child : undefined;
    if (running) {
      const closed = new Promise((resolve) => running.once('close', resolve));
      running.kill('SIGTERM');
      await closed;
    }
    await receiver?.close();
  });

  it('exports the spans of a call to the OTLP endpoint, flushing the last ones on SIGTERM, and its request lines carry the trace id', async () => {
    const env = {
      ...process.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url.replace(/\/v1\/traces$/, ''),
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'gw-under-test',
      // Nothing is sent before the shutdown's flush (a minute's batch delay).
      OTEL_BSP_SCHEDULE_DELAY: '60000',
    };
    const proc = spawn(process.execPath, [...nodeArgs(MAIN), '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    let stderr = '';
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number>((resolve) => proc.on('close', (code) => resolve(code ?? -1)));
    try {
      let url = '';
      // The listening line's url (the tracing line names the collector's).
      await until('the gateway to listen', () => (url = /"url":"(http:[^"]+)","backends"/.exec(stderr)?.[1] ?? '') !== '' || proc.exitCode !== null);
      expect(url, stderr).not.toBe('');
      expect(stderr).toMatch(/tracing on/);
      await until('the gateway to be ready', () =>
        fetch(new URL('/readyz', url)).then(
          (r) => r.ok,
          () => false,
        ),
      );
      const trace = '7ef92f3577b34da6a3ce929d0e0e4739';
      const reply = await post(url, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, { headers: { traceparent: `00-${trace}-00f067aa0ba902b7-01` } });
      expect(reply.message['result']).toMatchObject({ content: [{ text: 'hi' }] });
      await until('the exchange line', () => stderr.includes('"msg":"mcp"'));
      const line = JSON.parse(stderr.split('\n').find((l) => l.includes('"msg":"mcp"'))!) as Record<string, unknown>;
      expect(line['traceId']).toBe(trace);
      expect(receiver.spans).toEqual([]);
    } finally {
      proc.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const spans = receiver.spans.filter((s) => s.traceId === '7ef92f3577b34da6a3ce929d0e0e4739');
    expect(spans.map((s) => s.name).sort()).toEqual(['backend tools/call', 'mcp tools/call']);
    expect(spans[0]!.resource).toMatchObject({ 'service.name': 'gw-under-test', 'service.instance.id': expect.any(String) });
  });
});
