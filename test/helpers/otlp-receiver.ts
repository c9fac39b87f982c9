/**
 * An in-process OTLP/HTTP trace receiver (issue 28's proof): a real `node:http` server on 127.0.0.1
 * that takes what the gateway's exporter sends to `/v1/traces` (OTLP JSON), keeps each payload as
 * received, and decodes its spans (ids in hex, attributes as plain values).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One received span, decoded. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's enum: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  readonly links: readonly { traceId: string; spanId: string }[];
  readonly status: { code?: number; message?: string };
  /** The resource's attributes (service.name, service.instance.id). */
  readonly resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** Where the exporter sends (`…/v1/traces`). */
  readonly url: string;
  /** Every request body as it came (to search for what must never be there). */
  readonly payloads: string[];
  readonly spans: ReceivedSpan[];
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
}
type KeyValue = { key: string; value: AnyValue };

const plain = (v: AnyValue): unknown => v.stringValue ?? v.boolValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.doubleValue);
const attributesOf = (kvs: KeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, plain(kv.value)]));

/** The spans of one OTLP JSON `ExportTraceServiceRequest`. */
function decode(body: string): ReceivedSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
  };
  return (request.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: String(s['traceId']),
        spanId: String(s['spanId']),
        parentSpanId: String(s['parentSpanId'] ?? ''),
        name: String(s['name']),
        kind: Number(s['kind']),
        attributes: attributesOf(s['attributes'] as KeyValue[] | undefined),
        links: ((s['links'] as { traceId: string; spanId: string }[] | undefined) ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        status: (s['status'] as ReceivedSpan['status'] | undefined) ?? {},
        resource: attributesOf(rs.resource?.attributes),
      })),
    ),
  );
}

/** Starts the receiver on a free port of 127.0.0.1. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const payloads: string[] = [];
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const json = (req.headers['content-type'] ?? '').includes('application/json');
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !json) {
        res.writeHead(415).end();
        return;
      }
      payloads.push(body);
      spans.push(...decode(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    payloads,
    spans,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
