import { Injectable, Module } from '@nestjs/common';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  DelayAdmin,
  DelayedTaskHandler,
  DelayValidationError,
  TaskOutcome,
  type EntityTimeline,
  type TaskContext,
} from 'nest-delay';
import { MINUTE, useDelayTestApp } from './delay-test-app.js';

/**
 * DelayAdmin.timeline: every task of an entity, each step in time order with
 * its attempt, instance, duration, error and trace id, and what is still
 * due; written by the transitions' own statements, so a rolled-back change
 * leaves no step, and pruned with its task.
 */
const provider = new NodeTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
});
const tracer = trace.getTracer('timeline-test');
beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

/** Fails its first run, snoozes its second, completes its third. */
const runs = new Map<string, number>();
@Injectable()
class StepHandler {
  @DelayedTaskHandler('timeline.step')
  step(_payload: unknown, { task }: TaskContext): TaskOutcome | void {
    const n = (runs.get(task.id) ?? 0) + 1;
    runs.set(task.id, n);
    if (n === 1) throw new Error('the payment service timed out');
    if (n === 2) return TaskOutcome.snooze('5m');
  }
}
@Module({ providers: [StepHandler] })
class StepModule {}

const app = useDelayTestApp(
  {
    instanceId: 'timeline-a',
    concurrency: 1,
    retry: { baseDelay: '1m', jitter: 0 },
    retention: { finished: '1h', dead: false, interval: '1h' },
  },
  { modules: [{ module: StepModule }] },
);

const timeline = (entity: string): Promise<EntityTimeline> =>
  app.t.moduleRef.get(DelayAdmin).timeline(entity);
const steps = (tl: EntityTimeline, taskId: string) =>
  tl.entries
    .filter((e) => e.taskId === taskId)
    .map((e) => [e.event, e.attempt, e.instance, e.durationMs, e.detail]);

it('shows a retried, snoozed, executed task step by step, with instance and trace id; a cancel, a dead letter, and what is due', async () => {
  const { t } = app;
  const entity = 'order:timeline-1';
  const start = t.clock.now();
  const { task, traceId } = await tracer.startActiveSpan('POST /orders', async (span) => {
    const scheduled = await t.delay.schedule({ type: 'timeline.step', entity, delay: '1m' });
    span.end();
    return { task: scheduled, traceId: span.spanContext().traceId };
  });
  const doomed = await t.delay.schedule({
    type: 'test.always-fails',
    entity,
    delay: '1m',
    maxAttempts: 1,
  });
  const dropped = await t.delay.schedule({
    type: 'test.effect',
    key: 'tl-review',
    entity,
    delay: '1h',
  });
  const later = await t.delay.schedule({ type: 'test.effect', entity, delay: '2d' });

  await t.tester.advance(MINUTE); // attempt 1 fails: retry in 1 minute; the doomed one dies
  await t.tester.advance(MINUTE); // attempt 2 snoozes 5 minutes
  await t.tester.advance(5 * MINUTE); // attempt 2 again, completes
  // The order's two test.effect tasks are dropped; a new one is due in two days.
  await t.delay.cancelEntity(entity, { types: ['test.effect'] });
  const due = await t.delay.schedule({ type: 'test.effect', entity, delay: '2d' });

  const tl = await timeline(entity);
  expect(steps(tl, task.id)).toEqual([
    ['scheduled', null, null, null, null],
    ['started', 1, 'timeline-a', null, null],
    ['retried', 1, 'timeline-a', expect.any(Number), 'Error: the payment service timed out'],
    ['started', 2, 'timeline-a', null, null],
    ['snoozed', 2, 'timeline-a', expect.any(Number), null],
    ['started', 2, 'timeline-a', null, null],
    ['executed', 2, 'timeline-a', null, null],
  ]);
  const mine = tl.entries.filter((e) => e.taskId === task.id);
  // Every step carries the trace of the request that scheduled it.
  expect(mine.map((e) => e.traceId)).toEqual(mine.map(() => traceId));
  expect(mine[0].dueAt?.getTime()).toBe(start + MINUTE);
  expect(mine[2].dueAt?.getTime()).toBe(start + 2 * MINUTE);
  expect(mine[4].dueAt?.getTime()).toBe(start + 7 * MINUTE);
  expect(mine[6].at.getTime()).toBe(start + 7 * MINUTE);
  expect(steps(tl, doomed.id)).toEqual([
    ['scheduled', null, null, null, null],
    ['started', 1, 'timeline-a', null, null],
    ['dead', 1, 'timeline-a', expect.any(Number), 'Error: this handler always fails'],
  ]);
  for (const id of [dropped.id, later.id]) {
    expect(steps(tl, id)).toEqual([
      ['scheduled', null, null, null, null],
      ['cancelled', null, null, null, 'with its entity'],
    ]);
  }
  // In time order throughout.
  const times = tl.entries.map((e) => e.at.getTime());
  expect(times).toEqual([...times].sort((a, b) => a - b));
  expect(tl.due).toEqual([{ taskId: due.id, type: 'test.effect', key: null, dueAt: due.dueAt }]);
  expect(tl.tasks.map((x) => x.id)).toEqual([task.id, doomed.id, dropped.id, later.id, due.id]);
  expect(tl.finishedForgottenAfterMs).toBe(60 * MINUTE);
});

it('records nothing for tasks without an entity, nor for a change that rolled back', async () => {
  const { t } = app;
  const events = async () =>
    (await t.query(`SELECT count(*)::int AS n FROM delay_task_event`))[0].n as number;
  const before = await events();
  const plain = await t.delay.schedule({ type: 'test.effect', delay: '1m' });
  await t.delay.scheduleMany([{ type: 'test.effect', delay: '1m' }]);
  await t.delay.reschedule({ id: plain.id }, { delay: '2m' });
  await t.tester.advance(2 * MINUTE);
  expect(await events()).toBe(before);

  const entity = 'order:timeline-2';
  await t.delay.schedule({ type: 'test.effect', entity, delay: '1h' });
  const after = await events();
  await t.dataSource
    .transaction(async (manager) => {
      await t.delay.cancelEntity(entity, { manager });
      throw new Error('rolled back');
    })
    .catch(() => undefined);
  expect(await events()).toBe(after);
  expect((await timeline(entity)).entries.map((e) => e.event)).toEqual(['scheduled']);
});

it('forgets a pruned task with its history', async () => {
  const { t } = app;
  const entity = 'order:timeline-3';
  const task = await t.delay.schedule({ type: 'test.effect', entity, delay: '1m' });
  await t.tester.advance(MINUTE);
  expect((await timeline(entity)).entries.map((e) => e.event)).toEqual([
    'scheduled',
    'started',
    'executed',
  ]);
  await t.tester.advance(61 * MINUTE);
  // Advancing also runs the pruner's rounds; prune() makes sure one ran now.
  await t.tester.prune();
  expect(await t.delay.get({ id: task.id })).toBeUndefined();
  const tl = await timeline(entity);
  expect(tl.entries).toEqual([]);
  expect(tl.tasks).toEqual([]);
  const [{ n }] = await t.query(
    `SELECT count(*)::int AS n FROM delay_task_event WHERE task_id = $1`,
    [task.id],
  );
  expect(n).toBe(0);
});

it('reads through the entity indexes, not the tables', async () => {
  const { t } = app;
  await t.query(
    `INSERT INTO delay_task_event (task_id, entity, at, event)
     SELECT g, 'bulk:' || (g % 5000), now(), 'scheduled' FROM generate_series(1, 50000) g`,
  );
  await t.query(`ANALYZE delay_task_event`);
  const plan = (await t.query(`EXPLAIN SELECT * FROM delay_task_event WHERE entity = 'bulk:77'`))
    .map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN'])
    .join('\n');
  expect(plan).toContain('delay_task_event_entity_idx');
});

it('refuses a bad entity, naming it', async () => {
  const error = await timeline('').catch((e: unknown) => e);
  expect(error).toBeInstanceOf(DelayValidationError);
  expect(error).toMatchObject({ field: 'entity' });
});
