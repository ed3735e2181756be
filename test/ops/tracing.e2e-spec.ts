import { eventually, json, startApp, type AppProcess } from '../app/app-process.js';
import { startOtlpCollector, type OtlpCollector } from '../support/otlp-collector.js';
import { spanTree, type TreeSpan } from '../support/span-tree.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';

// The compiled service (`node dist/src/main.js`) with tracing turned on by
// the standard OTEL_* variables, exporting OTLP to a stand-in collector: one
// order's trace, from the request that finished it to the auto-review
// handler, across a restart of the app between the two.

const CONSUMER = 5; // OTLP's SPAN_KIND_CONSUMER

describeWithServer('tracing in the compiled service', () => {
  let db: TestDatabase;
  let collector: OtlpCollector;
  const apps: AppProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    collector = await startOtlpCollector();
  });
  afterAll(async () => {
    for (const app of apps) await app.kill().catch(() => undefined);
    await collector?.close();
    await db?.drop();
  });

  const env = (instance: string) => ({
    DATABASE_URL: db.url,
    DELAY_INSTANCE_ID: instance,
    ORDER_AUTO_REVIEW_DELAY: '4s',
    DELAY_TICK_MS: '100',
    OTEL_SERVICE_NAME: 'orders',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });

  it("continues the finishing request's trace in the auto-review handler, on the instance that ran it", async () => {
    const first = await startApp(env('first'));
    apps.push(first);
    const created = await json('POST', `${first.baseUrl}/orders`, {
      userId: 'traced',
      amountCents: 1200,
    });
    const id: string = created.body.id;
    expect((await json('POST', `${first.baseUrl}/orders/${id}/pay`)).status).toBe(200);
    expect((await json('POST', `${first.baseUrl}/orders/${id}/finish`)).status).toBe(200);
    // Restarted before the task is due: the next process runs it.
    expect(await first.stop()).toBe(0);

    const second = await startApp(env('second'));
    apps.push(second);
    await eventually(
      () => json('GET', `${second.baseUrl}/orders/${id}`),
      (res) => res.body.reviewStatus === 'AUTO_REVIEWED',
      20_000,
    );
    expect(await second.stop()).toBe(0);

    const spans = collector.spans;
    expect(collector.resource['service.name']).toBe('orders');
    // Nest's handler span for the finish request: the task was scheduled inside it.
    const finish = spans.find(
      (s) =>
        s.attributes['nestjs.type'] === 'handler' && s.attributes['nestjs.callback'] === 'finish',
    );
    if (!finish) throw new Error(`no Nest span for finish:\n${spanTree(spans)}`);
    const trace = spans.filter((s) => s.traceId === finish.traceId);
    const run = trace.find((s) => s.name === 'delay.run order.auto-review') as
      (TreeSpan & { kind: number }) | undefined;
    if (!run) throw new Error(`the handler's span is not in the trace:\n${spanTree(trace)}`);
    expect(run.parentSpanId).toBe(finish.spanId);
    expect(run.kind).toBe(CONSUMER);
    expect(run.attributes).toMatchObject({
      'delay.task.type': 'order.auto-review',
      'delay.task.key': `order:${id}:auto-review`,
      'delay.task.attempt': 1,
      'delay.task.outcome': 'executed',
      'delay.instance.id': 'second',
    });
    // The handler's statements, in the claim transaction, nest under its span.
    const statements = trace
      .filter((s) => s.parentSpanId === run.spanId)
      .map((s) => String(s.attributes['db.query.text'] ?? s.attributes['db.statement']).trim());
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^UPDATE "?orders"?/i),
        expect.stringMatching(/^INSERT INTO "?order_event"?/i),
        expect.stringMatching(/^SET CONSTRAINTS ALL IMMEDIATE; COMMIT/),
      ]),
    );
    // The request's own spans: HTTP at the root, Nest, and its statements.
    const root = trace.find((s) => !s.parentSpanId);
    expect(root?.name).toBe('POST /orders/:id/finish');
    expect(trace.some((s) => /^pg\.query/.test(s.name) && s.parentSpanId !== run.spanId)).toBe(
      true,
    );
    // Probes and the engine's background statements make no traces of their own.
    expect(spans.filter((s) => /health|metrics/.test(String(s.attributes['url.path'])))).toEqual(
      [],
    );
    console.log(
      `One order's trace (finish, then the auto-review after a restart):\n${spanTree(trace)}`,
    );
  }, 90_000);
});
