import { Injectable, Module } from '@nestjs/common';
import { DelayAdmin, DelayLimits, DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import {
  HOUR,
  MINUTE,
  SECOND,
  createDelayTestApp,
  recordEffect,
  type DelayTestApp,
} from './delay-test-app.js';

// Issue 44: reset() leaves nothing of an earlier test, nor of an earlier run
// on the same database. A timeline test is the one that saw it: reset
// deleted the tasks but not their history, and the next test's timeline of
// the same entity began with the last one's steps, of type "unknown".

/** At most one start an hour, declared in code: what a reset keeps. */
@Injectable()
class RateLimited {
  @DelayedTaskHandler('reset.rate-limited', { limit: { rate: { starts: 1, per: '1h' } } })
  async run(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
  }
}

@Module({ providers: [RateLimited] })
class RateLimitedModule {}

const boot = (db: TestDatabase) =>
  createDelayTestApp(db, {}, { modules: [{ module: RateLimitedModule }] });

/**
 * What a user's test of an entity's timeline does, from its beforeEach on:
 * a task of order 42 fails once, is retried and completes in one advance,
 * and the timeline shows exactly that.
 */
async function orderTimelineTest(t: DelayTestApp) {
  await t.tester.reset();
  const task = await t.delay.schedule({
    type: 'test.effect',
    entity: 'order:42',
    delay: '1m',
    payload: { fail: 1 },
  });
  await t.tester.advance('10m');
  const { entries, tasks } = await t.moduleRef.get(DelayAdmin).timeline('order:42');
  expect(tasks.map((row) => row.id)).toEqual([task.id]);
  expect(entries.map((e) => [e.event, e.type, e.taskId])).toEqual(
    ['scheduled', 'started', 'retried', 'started', 'executed'].map((event) => [
      event,
      'test.effect',
      task.id,
    ]),
  );
}

describe('DelayTester.reset on a reused database', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('lets a timeline test pass twice in one run, and again in a second run on the same database', async () => {
    const first = await boot(db);
    try {
      await orderTimelineTest(first);
      await orderTimelineTest(first);
    } finally {
      await first.close();
    }
    // The second run's clock starts where the first one's did: before every
    // row the first run wrote.
    const second = await boot(db);
    try {
      await orderTimelineTest(second);
    } finally {
      await second.close();
    }
  });
});

/** The limit gate's picture of the rate-limited type, its ledger and the instance's lease, as JSON. */
async function gateState(t: DelayTestApp): Promise<string> {
  const runtime = t.delay['runtime'];
  const gate = runtime.dispatcher.gate;
  return JSON.stringify({
    now: new Date(t.clock.now()),
    limits: gate.book.of('reset.rate-limited'),
    waiting: [...gate.waitingByType()],
    gate: { busy: gate.busy, size: gate.size, hasReady: gate.hasReady },
    dispatcher: { idle: runtime.dispatcher.idle, queued: runtime.dispatcher.queuedCount },
    held: runtime.wheel.size,
    credits: await t.query(`SELECT * FROM delay_limit_credit`),
    instances: await t.query(`SELECT id, heartbeat_at, lease_until FROM delay_instance`),
    task: await t.query(`SELECT id, due_at, locked_by, attempts FROM delayed_task`),
  });
}

describe('DelayTester.reset', () => {
  let db: TestDatabase;
  let t: DelayTestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    t = await boot(db);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });
  beforeEach(() => t.tester.reset());

  const limits = () => t.moduleRef.get(DelayLimits);

  it("forgets the rate limit's starts of an earlier test: the next start is not held up", async () => {
    const earlier = await t.delay.schedule({ type: 'reset.rate-limited', delay: '1s' });
    await t.tester.advance('1s');
    expect(await t.effects(earlier.id)).toBe(1);

    await t.tester.reset();

    // Within the hour of the earlier start: its credit, left behind, would hold this one back.
    const start = t.clock.now();
    const task = await t.delay.schedule({ type: 'reset.rate-limited', delay: '1m' });
    await t.tester.advance('1m');
    // Failed once in CI (still pending, 126ac55) and never in 60 runs here: what the gate saw, if again.
    if ((await t.delay.get({ id: task.id }))?.state !== 'executed') console.log(await gateState(t));
    expect(await t.delay.get({ id: task.id })).toMatchObject({
      state: 'executed',
      executedAt: new Date(start + MINUTE),
    });
  });

  it('undoes the pauses and limits set at run time, and forgets the tasks they held back', async () => {
    await limits().pause('test.effect');
    await limits().set('reset.rate-limited', { rate: null, concurrency: 2 });
    await t.delay.schedule({ type: 'test.effect', delay: '1s' });
    await t.tester.advance('1s');
    expect(await limits().get('test.effect')).toMatchObject({ paused: true, waitingHere: 1 });

    await t.tester.reset();

    expect(await limits().get('test.effect')).toMatchObject({
      paused: false,
      override: null,
      waiting: 0,
      waitingHere: 0,
    });
    // The declared limit is in force again.
    expect(await limits().get('reset.rate-limited')).toMatchObject({
      override: null,
      effective: { concurrency: null, rate: { starts: 1, perMs: HOUR } },
    });
    const task = await t.delay.schedule({ type: 'test.effect', delay: '1s' });
    await t.tester.advance('1s');
    expect(await t.effects(task.id)).toBe(1);
  });

  it("counts only this test's tasks, with the clock where it was", async () => {
    const admin = t.moduleRef.get(DelayAdmin);
    await t.delay.schedule({ type: 'test.effect', delay: '1h' });
    await t.delay.schedule({ type: 'test.effect', delay: '1h' });
    expect((await admin.counts()).states.pending.count).toBe(2);

    await t.tester.reset();

    await t.delay.schedule({ type: 'test.effect', delay: '1h' });
    expect((await admin.counts()).states.pending.count).toBe(1);
  });

  it('leaves the clock where it is', async () => {
    await t.tester.advance('90m');
    const now = t.clock.now();
    await t.tester.reset();
    expect(t.clock.now()).toBe(now);
    const task = await t.delay.schedule({ type: 'test.effect', delay: '30s' });
    expect(task.dueAt).toEqual(new Date(now + 30 * SECOND));
  });
});
