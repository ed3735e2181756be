import { Injectable, Module } from '@nestjs/common';
import { SpanKind, SpanStatusCode, context, trace, type Span } from '@opentelemetry/api';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import pg from 'pg';
import { DelayService, DelayedTaskHandler, TaskOutcome, type TaskContext } from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { HOUR, MINUTE, createDelayTestApp, type DelayTestApp } from './delay-test-app.js';
import { spanTree } from '../support/span-tree.js';

// The package's side of OpenTelemetry against the SDK's in-memory exporter:
// a task's handler span continues the trace of the span it was scheduled in,
// however long after and on whichever instance it runs.

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
// pg as the claim's connections use it: patched by the instrumentation by hand,
// since Jest loads modules past the require hook the SDK would install.
const pgInstrumentation = new PgInstrumentation({ requireParentSpan: true });
const tracer = trace.getTracer('test');

beforeAll(() => {
  provider.register();
  pgInstrumentation.setTracerProvider(provider);
  const [pgModule] = pgInstrumentation.getModuleDefinitions();
  pgModule.patch?.(pg);
});
afterAll(async () => {
  pgInstrumentation.disable();
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const snoozed = new Set<string>();

@Injectable()
class TracedHandlers {
  constructor(private readonly delay: DelayService) {}

  @DelayedTaskHandler('trace.snooze-once')
  snoozeOnce(_payload: unknown, { task }: TaskContext) {
    if (snoozed.has(task.id)) return;
    snoozed.add(task.id);
    return TaskOutcome.snooze('10m');
  }

  /** Schedules a task of its own: that one continues this handler's trace. */
  @DelayedTaskHandler('trace.chain')
  async chain(_payload: unknown, { manager }: TaskContext) {
    await this.delay.schedule({ type: 'test.effect', delay: '1h' }, { manager });
  }

  @DelayedTaskHandler('trace.dies', { maxAttempts: 1 })
  dies(): never {
    throw new Error('gone for good');
  }
}

@Module({ providers: [TracedHandlers] })
class TracedHandlersModule {}

/** A request span, as the HTTP instrumentation would make one, with `fn` inside it. */
async function inRequest<T>(name: string, fn: () => Promise<T>): Promise<[T, Span]> {
  return tracer.startActiveSpan(name, { kind: SpanKind.SERVER }, async (span) => {
    try {
      return [await fn(), span] as [T, Span];
    } finally {
      span.end();
    }
  });
}

const runsOf = (taskId: string): ReadableSpan[] =>
  exporter
    .getFinishedSpans()
    .filter((s) => s.name.startsWith('delay.run ') && s.attributes['delay.task.id'] === taskId)
    .sort(
      (a, b) =>
        Number(a.attributes['delay.task.attempt']) - Number(b.attributes['delay.task.attempt']),
    );

function expectChildOf(child: ReadableSpan, parent: Pick<Span, 'spanContext'>): void {
  expect(child.spanContext().traceId).toBe(parent.spanContext().traceId);
  expect(child.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
}

describe('tracing across a delay', () => {
  let db: TestDatabase;
  let t: DelayTestApp;
  const clock = new ManualClock();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createDelayTestApp(
      db,
      { instanceId: 'traced-1' },
      { clock, modules: [{ module: TracedHandlersModule }] },
    );
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });
  beforeEach(() => exporter.reset());

  it("runs the handler 48 hours later as a child of the scheduling request's span", async () => {
    const [task, request] = await inRequest('POST /orders/:id/finish', () =>
      t.delay.schedule({ type: 'test.effect', key: 'order:1:auto-review', delay: '48h' }),
    );
    const [row] = await t.query(`SELECT trace_context FROM delayed_task WHERE id = $1`, [task.id]);
    const { traceId, spanId } = request.spanContext();
    expect(row.trace_context).toEqual({ traceparent: `00-${traceId}-${spanId}-01` });

    await t.tester.advance(47 * HOUR);
    expect(runsOf(task.id)).toEqual([]);
    await t.tester.advance(HOUR);

    const [run] = runsOf(task.id);
    expectChildOf(run, request);
    expect(run.name).toBe('delay.run test.effect');
    expect(run.kind).toBe(SpanKind.CONSUMER);
    expect(run.attributes).toMatchObject({
      'delay.task.id': task.id,
      'delay.task.type': 'test.effect',
      'delay.task.key': 'order:1:auto-review',
      'delay.task.attempt': 1,
      'delay.task.lateness_ms': 0,
      'delay.task.outcome': 'executed',
      'delay.instance.id': 'traced-1',
      'messaging.system': 'nest-delay',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'test.effect',
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("puts the handler's statements, and the COMMIT of a task claimed alone, under its span", async () => {
    const [task, request] = await inRequest('POST /orders', () =>
      t.delay.schedule({ type: 'test.effect', delay: '1m' }),
    );
    await t.tester.advance(MINUTE);
    const [run] = runsOf(task.id);
    expectChildOf(run, request);
    const statements = exporter
      .getFinishedSpans()
      .filter((s) => s.parentSpanContext?.spanId === run.spanContext().spanId)
      .map((s) => String(s.attributes['db.query.text'] ?? s.attributes['db.statement'] ?? s.name));
    expect(statements).toEqual([
      expect.stringMatching(/^INSERT INTO effect/),
      expect.stringMatching(/^SET CONSTRAINTS ALL IMMEDIATE; COMMIT/),
    ]);
    // The claim itself (the engine's, for a batch) joins no request's trace.
    const traceIds = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().traceId));
    expect([...traceIds]).toEqual([request.spanContext().traceId]);
    expect(spanTree(exporter.getFinishedSpans())).toMatch(
      /POST \/orders .*\n {4}pg.query:INSERT .*\n {4}delay.run test.effect .*\n {6}pg.query:INSERT .*\n {6}pg.query:SET .*COMMIT/,
    );
  });

  it('keeps the original context across a failed attempt and its retry, recording the error', async () => {
    const [task, request] = await inRequest('POST /orders/:id/finish', () =>
      t.delay.schedule({ type: 'test.effect', payload: { fail: 1 }, delay: '48h' }),
    );
    await t.tester.advance(48 * HOUR);
    await t.tester.advance(MINUTE);
    const [failed, retried] = runsOf(task.id);
    expectChildOf(failed, request);
    expectChildOf(retried, request);
    expect(failed.attributes).toMatchObject({
      'delay.task.attempt': 1,
      'delay.task.outcome': 'retry',
    });
    expect(failed.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: expect.stringContaining(`planned failure 1 of task ${task.id}`),
    });
    const [exception] = failed.events.filter((e) => e.name === 'exception');
    expect(exception.attributes).toMatchObject({
      'exception.message': `planned failure 1 of task ${task.id}`,
      'exception.stacktrace': expect.stringContaining('TestHandlers.effect'),
    });
    expect(retried.attributes).toMatchObject({
      'delay.task.attempt': 2,
      'delay.task.outcome': 'executed',
    });
  });

  it('keeps it across a snooze and a manual retry of a dead task, whoever asks for the retry', async () => {
    const [snoozing, request] = await inRequest('POST /a', () =>
      t.delay.schedule({ type: 'trace.snooze-once', delay: '1h' }),
    );
    // Due a minute later: a claim of both would roll the snooze back with
    // the death and run it again (the optimistic pass), a run of its own here.
    const [dying, other] = await inRequest('POST /b', () =>
      t.delay.schedule({ type: 'trace.dies', delay: '61m' }),
    );
    await t.tester.advance(HOUR);
    await t.tester.advance(10 * MINUTE);
    const [first, second] = runsOf(snoozing.id);
    expect(first.attributes['delay.task.outcome']).toBe('snooze');
    expect(second.attributes['delay.task.outcome']).toBe('executed');
    expectChildOf(first, request);
    expectChildOf(second, request);

    expect(runsOf(dying.id).map((s) => s.attributes['delay.task.outcome'])).toEqual(['dead']);
    // An operator retries it from an admin request of their own: the task keeps its trace.
    await inRequest('POST /admin/api/tasks/:id/retry', () => t.delay.retry({ id: dying.id }));
    await t.tester.runDue();
    const runs = runsOf(dying.id);
    expect(runs).toHaveLength(2);
    for (const run of runs) expectChildOf(run, other);
  });

  it("gives a task scheduled by a handler that handler's span as its parent", async () => {
    const [parentTask, request] = await inRequest('POST /c', () =>
      t.delay.schedule({ type: 'trace.chain', delay: '1m' }),
    );
    await t.tester.advance(MINUTE);
    const [chainRun] = runsOf(parentTask.id);
    expectChildOf(chainRun, request);
    const [child] = await t.query(
      `SELECT id FROM delayed_task WHERE type = 'test.effect' ORDER BY id DESC LIMIT 1`,
    );
    await t.tester.advance(HOUR);
    const [childRun] = runsOf(child.id);
    expectChildOf(childRun, { spanContext: () => chainRun.spanContext() });
  });

  it('starts a trace of its own for a task scheduled outside any span', async () => {
    const task = await t.delay.schedule({ type: 'test.effect', delay: '1m' });
    const [row] = await t.query(`SELECT trace_context FROM delayed_task WHERE id = $1`, [task.id]);
    expect(row.trace_context).toBeNull();
    await t.tester.advance(MINUTE);
    const [run] = runsOf(task.id);
    expect(run.parentSpanContext).toBeUndefined();
  });

  it('carries one context for every task of a scheduleMany', async () => {
    const [results, request] = await inRequest('POST /import', () =>
      t.delay.scheduleMany([
        { type: 'test.effect', delay: '1m' },
        { type: 'test.effect', key: 'import:2', delay: '1m' },
      ]),
    );
    await t.tester.advance(MINUTE);
    for (const { id } of results) expectChildOf(runsOf(id)[0], request);
  });
});

describe('tracing across a restart between scheduling and firing', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('runs the task on the next instance under the trace it was scheduled in', async () => {
    exporter.reset();
    const clock = new ManualClock();
    const first = await createDelayTestApp(db, { instanceId: 'before' }, { clock });
    const [task, request] = await inRequest('POST /orders/:id/finish', () =>
      first.delay.schedule({ type: 'test.effect', delay: '48h' }),
    );
    await first.close();

    clock.advance(48 * HOUR);
    const second = await createDelayTestApp(db, { instanceId: 'after' }, { clock });
    try {
      await second.tester.runDue();
      const [run] = runsOf(task.id);
      expectChildOf(run, request);
      expect(run.attributes['delay.instance.id']).toBe('after');
    } finally {
      await second.close();
    }
  });
});

describe('tracing: false', () => {
  let db: TestDatabase;
  let t: DelayTestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createDelayTestApp(db, { tracing: false });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('stores no context and starts no span, with an SDK registered', async () => {
    exporter.reset();
    const [task] = await inRequest('POST /x', () =>
      t.delay.schedule({ type: 'test.effect', delay: '1m' }),
    );
    const [row] = await t.query(`SELECT trace_context FROM delayed_task WHERE id = $1`, [task.id]);
    expect(row.trace_context).toBeNull();
    await t.tester.advance(MINUTE);
    expect(await t.effects(task.id)).toBe(1);
    expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith('delay.'))).toEqual([]);
  });
});
