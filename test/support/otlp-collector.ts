import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TreeSpan } from './span-tree.js';

/**
 * A stand-in for a trace backend: an HTTP server that takes what the OTLP
 * exporter posts to /v1/traces (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json)
 * and keeps the spans, as Jaeger's OTLP receiver would.
 */
export interface OtlpCollector {
  endpoint: string;
  spans: TreeSpan[];
  /** Resource attributes of the last batch (service.name...). */
  resource: Record<string, unknown>;
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: OtlpAttribute[];
  status?: { code?: number; message?: string };
  events?: Array<{ name: string; attributes?: OtlpAttribute[] }>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const collector: OtlpCollector = {
    endpoint: '',
    spans: [],
    resource: {},
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const payload = JSON.parse(body) as {
          resourceSpans: Array<{
            resource?: { attributes?: OtlpAttribute[] };
            scopeSpans: Array<{ spans: OtlpSpan[] }>;
          }>;
        };
        for (const { resource, scopeSpans } of payload.resourceSpans) {
          collector.resource = attributesOf(resource?.attributes);
          for (const { spans } of scopeSpans) collector.spans.push(...spans.map(toTreeSpan));
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  collector.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return collector;
}

function toTreeSpan(span: OtlpSpan): TreeSpan & { kind: number; events: string[] } {
  const start = Number(BigInt(span.startTimeUnixNano) / 1000n) / 1000;
  const end = Number(BigInt(span.endTimeUnixNano) / 1000n) / 1000;
  return {
    name: span.name,
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId || undefined,
    startMs: start,
    durationMs: end - start,
    attributes: attributesOf(span.attributes),
    status: span.status?.code === 2 ? `ERROR(${span.status.message ?? ''})` : undefined,
    kind: span.kind,
    events: (span.events ?? []).map((event) => event.name),
  };
}

function attributesOf(attributes: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? []) {
    out[key] =
      value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ??
      value.boolValue;
  }
  return out;
}
