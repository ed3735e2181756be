/**
 * OpenTelemetry for this project's `tracing: 'on'` runs: the SDK's tracer
 * provider with the always-on sampler and a batch processor exporting to
 * memory, as an app that traces every task would run it, minus the network.
 * Loaded only for those runs (a dynamic import), so no other run pays for
 * it. The exporter counts what it is given and keeps nothing, so a burst of
 * 100,000 spans does not grow the heap being measured.
 */
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';

export interface BenchTracing {
  /** Spans exported so far (one per handler run, when every task ran once). */
  readonly exported: () => number;
  /** Starts a span and runs `fn` inside it, as a request scheduling tasks would. */
  inSpan<T>(name: string, fn: () => Promise<T>): Promise<T>;
  shutdown(): Promise<void>;
}

export async function startBenchTracing(): Promise<BenchTracing> {
  const [{ trace }, { NodeTracerProvider }, base] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  let exported = 0;
  class CountingExporter extends base.InMemorySpanExporter {
    override export(spans: ReadableSpan[], done: Parameters<InMemorySpanExporter['export']>[1]) {
      exported += spans.length;
      super.export(spans, done);
      this.reset();
    }
  }
  const provider = new NodeTracerProvider({
    sampler: new base.AlwaysOnSampler(),
    spanProcessors: [
      // A queue no burst fills: a dropped span would be a span not paid for.
      new base.BatchSpanProcessor(new CountingExporter(), {
        maxQueueSize: 1_000_000,
        maxExportBatchSize: 5_000,
        scheduledDelayMillis: 500,
      }),
    ],
  });
  provider.register();
  const tracer = trace.getTracer('bench');
  return {
    exported: () => exported,
    inSpan: (name, fn) =>
      tracer.startActiveSpan(name, async (span) => {
        try {
          return await fn();
        } finally {
          span.end();
        }
      }),
    shutdown: () => provider.shutdown(),
  };
}
