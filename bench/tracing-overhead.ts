/**
 * `npm run bench:tracing -- --overhead`: the tracing work one claimed task
 * costs in-process, without Postgres: what ClaimBatch does per task with its
 * PassSpans (open the span, run the handler inside its context, end it with
 * its fate), 100,000 tasks in batches of 50, per mode (see tracing-cost.ts):
 * `disabled` (no TaskTracing at all), `off` (the API, no SDK) and `on` (the
 * SDK, always-on, batch export to a counting in-memory exporter). CPU µs per
 * task, the median of `rounds`; the handler itself is one resolved promise.
 */
import * as api from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  InMemorySpanExporter,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import type { ClaimRow } from '../packages/nest-delay/src/tasks/task-row.js';
import {
  loadTaskTracing,
  type TaskTracing,
} from '../packages/nest-delay/src/tracing/task-tracing.js';
import type { Fate } from '../packages/nest-delay/src/tasks/task-transitions.js';

const TASKS = 100_000;
const BATCH = 50;

class DroppingExporter extends InMemorySpanExporter {
  override export(spans: ReadableSpan[], done: Parameters<InMemorySpanExporter['export']>[1]) {
    super.export(spans, done);
    this.reset();
  }
}

function rowsOf(): ClaimRow[] {
  const traceparent = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${'00f067aa0ba902b7'}-01`;
  return Array.from({ length: BATCH }, (_, i) => ({
    id: String(i + 1),
    type: 'bench.effect',
    key: null,
    payload: null,
    due_at: new Date(),
    executed_at: new Date(),
    cancelled_at: null,
    dead_at: null,
    attempts: 1,
    max_attempts: 5,
    last_error: null,
    locked_by: 'bench',
    created_at: new Date(),
    updated_at: new Date(),
    trace_context: { traceparent },
  })) as ClaimRow[];
}

/** CPU µs per task of the claim's per-task tracing work, `tracing` as given. */
async function measure(tracing: TaskTracing | undefined): Promise<number> {
  const rows = rowsOf();
  const handler = () => Promise.resolve();
  const before = process.cpuUsage();
  for (let b = 0; b < TASKS / BATCH; b++) {
    const spans = tracing?.pass();
    const fates: Fate[] = [];
    for (const row of rows) {
      spans?.open(row, Date.now());
      await (spans ? spans.within(row.id, handler) : handler());
      fates.push({ transition: 'complete', row });
    }
    spans?.committed(fates);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / TASKS;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

export async function measureOverhead(rounds: number): Promise<string> {
  const load = async () => api;
  const results = { disabled: [] as number[], off: [] as number[], on: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    results.disabled.push(await measure(undefined));
    results.off.push(await measure(await loadTaskTracing(true, 'bench', load)));
    const provider = new NodeTracerProvider({
      sampler: new AlwaysOnSampler(),
      spanProcessors: [
        new BatchSpanProcessor(new DroppingExporter(), {
          maxQueueSize: 1_000_000,
          maxExportBatchSize: 5_000,
          scheduledDelayMillis: 500,
        }),
      ],
    });
    provider.register();
    results.on.push(await measure(await loadTaskTracing(true, 'bench', load)));
    await provider.shutdown();
    api.trace.disable();
    api.context.disable();
    api.propagation.disable();
  }
  const fmt = (v: number) => v.toFixed(2);
  return (
    `in-process, CPU µs per task (median of ${rounds}): disabled ${fmt(median(results.disabled))}, ` +
    `off ${fmt(median(results.off))}, on ${fmt(median(results.on))}`
  );
}
