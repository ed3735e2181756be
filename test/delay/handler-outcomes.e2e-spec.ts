import { Injectable, Module } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { DelayedTaskHandler, TaskOutcome, type TaskContext } from 'nest-delay';
import type { RunReport } from 'nest-delay/testing';
import {
  CapturingLogger,
  HOUR,
  MINUTE,
  SECOND,
  useDelayTestApp,
  recordEffect,
  type DelayTestApp,
} from './delay-test-app.js';

/** What a handler saw, by task id, and whether its manager was in a transaction then. */
const seen = new Map<
  string,
  { context: TaskContext; inTransaction: boolean | undefined; transactionIds?: string[] }
>();

@Injectable()
class OutcomeHandlers {
  /** Writes its effect, then says retrying cannot help. */
  @DelayedTaskHandler('outcome.discard')
  async discard(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    return TaskOutcome.discard('bad payload');
  }

  /** Writes its effect every run; snoozes for `snooze` (default 10m) until it has run `times` times. */
  @DelayedTaskHandler('outcome.snooze')
  async snooze(payload: { times: number; snooze?: string }, context: TaskContext) {
    await recordEffect(context.manager, context);
    const [{ n }] = await context.manager.query(
      `SELECT count(*)::int AS n FROM effect WHERE task_id = $1`,
      [context.task.id],
    );
    if (n <= payload.times) return TaskOutcome.snooze(payload.snooze ?? '10m');
  }

  /** Options of its own: 2 attempts, 1 s backoff (the module's: 7 attempts, 10 s). */
  @DelayedTaskHandler('outcome.limited', { maxAttempts: 2, retry: { baseDelay: '1s', jitter: 0 } })
  async limited(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    throw new Error('limited: always fails');
  }

  @DelayedTaskHandler('outcome.context')
  async context(_payload: unknown, context: TaskContext) {
    const xid = `SELECT pg_current_xact_id()::text AS xid`;
    const transactionIds = [
      (await context.manager.query(xid))[0].xid,
      (await context.sql.rows<{ xid: string }>(xid, []))[0].xid,
      ((await context.client.query(xid)).rows[0] as { xid: string }).xid,
    ];
    seen.set(context.task.id, {
      context,
      inTransaction: context.manager.queryRunner?.isTransactionActive,
      transactionIds,
    });
    await recordEffect(context.manager, context);
  }
}

@Module({ providers: [OutcomeHandlers] })
class OutcomeModule {}

const counts = (c: Partial<RunReport> = {}) => ({
  executed: 0,
  failed: 0,
  deadLettered: 0,
  snoozed: 0,
  skipped: 0,
  ...c,
});

const logger = new CapturingLogger();
const app = useDelayTestApp(
  {
    instanceId: 'outcomes',
    concurrency: 1,
    retry: { maxAttempts: 7, baseDelay: '10s', jitter: 0 },
  },
  { modules: [{ module: OutcomeModule }], logger },
);
let t: DelayTestApp;

beforeAll(async () => {
  t = app.t;
});

describe('TaskOutcome.discard', () => {
  it('dead-letters the task after one attempt with the reason, and commits the handler’s writes', async () => {
    await t.quiesce();
    const task = await t.delay.schedule({ type: 'outcome.discard', delay: 0, maxAttempts: 5 });
    const report = await t.tester.runDue();
    expect(report).toEqual({
      ...counts({ deadLettered: 1 }),
      byType: { 'outcome.discard': counts({ deadLettered: 1 }) },
    });
    const dead = await t.delay.get({ id: task.id });
    expect(dead).toMatchObject({
      state: 'dead',
      attempts: 1,
      maxAttempts: 5,
      lastError: 'bad payload',
      lockedBy: null,
      executedAt: null,
    });
    expect(dead!.deadAt?.getTime()).toBe(t.clock.now());
    expect(await t.effects(task.id)).toBe(1);
    expect(t.tester.isHeld(task.id)).toBe(false);
    // Dead stays dead: nothing retries it.
    await t.tester.advance('1h');
    expect((await t.delay.get({ id: task.id }))?.state).toBe('dead');
    expect(await t.effects(task.id)).toBe(1);
    // A person may still retry it.
    expect(await t.delay.retry({ id: task.id })).toMatchObject({ state: 'pending', attempts: 0 });
    await t.tester.runDue();
    expect(await t.effects(task.id)).toBe(2);
  });

  it('in a batch, a discard is no failure: the others commit in the same optimistic pass', async () => {
    await t.quiesce();
    const runAt = t.clock.now() + MINUTE;
    const results = await t.delay.scheduleMany([
      { type: 'test.effect', runAt },
      { type: 'outcome.discard', runAt },
      { type: 'test.effect', runAt },
    ]);
    const before = t.delay.stats();
    const report = await t.tester.advance('1m');
    const after = t.delay.stats();
    expect(after.batches - before.batches).toBe(1);
    expect(after.reruns - before.reruns).toBe(0);
    expect(report).toEqual({
      ...counts({ executed: 2, deadLettered: 1 }),
      byType: {
        'test.effect': counts({ executed: 2 }),
        'outcome.discard': counts({ deadLettered: 1 }),
      },
    });
    const states = await Promise.all(results.map((r) => t.delay.get({ id: r.id })));
    expect(states.map((task) => task?.state)).toEqual(['executed', 'dead', 'executed']);
    expect(await Promise.all(results.map((r) => t.effects(r.id)))).toEqual([1, 1, 1]);
  });
});

describe('TaskOutcome.snooze', () => {
  it('puts the task back, due later, without spending an attempt; never dead-letters; then runs', async () => {
    await t.quiesce();
    const task = await t.delay.schedule({
      type: 'outcome.snooze',
      delay: 0,
      maxAttempts: 2,
      payload: { times: 4 },
    });
    const report = await t.tester.runDue();
    expect(report).toEqual({
      ...counts({ snoozed: 1 }),
      byType: { 'outcome.snooze': counts({ snoozed: 1 }) },
    });
    let row = await t.delay.get({ id: task.id });
    expect(row).toMatchObject({ state: 'pending', attempts: 0, lastError: null });
    expect(row!.dueAt.getTime()).toBe(t.clock.now() + 10 * MINUTE);
    expect(t.tester.isHeld(task.id)).toBe(true);
    // Its write committed although it did not finish.
    expect(await t.effects(task.id)).toBe(1);

    // Not one millisecond early.
    expect((await t.tester.advance(10 * MINUTE - 1)).byType).toEqual({});
    expect(await t.effects(task.id)).toBe(1);
    expect((await t.tester.advance(1)).byType['outcome.snooze']).toEqual(counts({ snoozed: 1 }));

    // Four snoozes in all, twice its maxAttempts: still pending, attempts untouched.
    for (let i = 0; i < 2; i++) {
      expect((await t.tester.advance('10m')).byType['outcome.snooze']).toEqual(
        counts({ snoozed: 1 }),
      );
    }
    row = await t.delay.get({ id: task.id });
    expect(row).toMatchObject({ state: 'pending', attempts: 0, maxAttempts: 2 });

    // The fifth run returns nothing: executed, on its first attempt.
    expect((await t.tester.advance('10m')).byType['outcome.snooze']).toEqual(
      counts({ executed: 1 }),
    );
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed', attempts: 1 });
    const runs = await t.query<{ attempt: number }>(
      `SELECT attempt FROM effect WHERE task_id = $1 ORDER BY id`,
      [task.id],
    );
    expect(runs.map((r) => r.attempt)).toEqual([1, 1, 1, 1, 1]);
  });

  it('a snooze past the window leaves the task unleased, for the loader to bring back', async () => {
    const task = await t.delay.schedule({
      type: 'outcome.snooze',
      delay: 0,
      payload: { times: 1, snooze: '3h' },
    });
    await t.tester.runDue();
    const row = await t.delay.get({ id: task.id });
    expect(row).toMatchObject({ state: 'pending', attempts: 0, lockedBy: null });
    expect(row!.dueAt.getTime()).toBe(t.clock.now() + 3 * HOUR);
    expect(t.tester.isHeld(task.id)).toBe(false);
    await t.tester.advance(3 * HOUR - SECOND);
    expect(await t.effects(task.id)).toBe(1);
    await t.tester.advance(SECOND);
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed', attempts: 1 });
    expect(await t.effects(task.id)).toBe(2);
  });
});

describe('per-handler options', () => {
  it('a task of the type gets the handler’s maxAttempts unless it sets its own', async () => {
    const plain = await t.delay.schedule({ type: 'outcome.limited', delay: '30m' });
    const own = await t.delay.schedule({ type: 'outcome.limited', delay: '30m', maxAttempts: 4 });
    const other = await t.delay.schedule({ type: 'test.effect', delay: '30m' });
    const [bulk] = await t.delay.scheduleMany([{ type: 'outcome.limited', delay: '30m' }]);
    expect([plain.maxAttempts, own.maxAttempts, other.maxAttempts]).toEqual([2, 4, 7]);
    const stored = await t.query<{ id: string; max_attempts: number }>(
      `SELECT id, max_attempts FROM delayed_task WHERE id = ANY($1) ORDER BY id`,
      [[plain.id, own.id, other.id, bulk.id]],
    );
    expect(stored.map((r) => r.max_attempts)).toEqual([2, 4, 7, 2]);
    for (const id of [plain.id, own.id, other.id, bulk.id]) await t.delay.cancel({ id });
  });

  it('an always-failing task is retried with the handler’s backoff and dead-lettered after its attempts', async () => {
    await t.quiesce();
    const task = await t.delay.schedule({ type: 'outcome.limited', delay: 0 });
    expect((await t.tester.runDue()).byType['outcome.limited']).toEqual(counts({ failed: 1 }));
    const retrying = await t.delay.get({ id: task.id });
    expect(retrying).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastError: 'Error: limited: always fails',
    });
    // The handler's 1 s, not the module's 10 s.
    expect(retrying!.dueAt.getTime()).toBe(t.clock.now() + SECOND);
    expect((await t.tester.advance(SECOND - 1)).byType).toEqual({});
    const report = await t.tester.advance(1);
    expect(report).toEqual({
      ...counts({ deadLettered: 1 }),
      byType: { 'outcome.limited': counts({ deadLettered: 1 }) },
    });
    expect(await t.delay.get({ id: task.id })).toMatchObject({
      state: 'dead',
      attempts: 2,
      maxAttempts: 2,
      lastError: 'Error: limited: always fails',
    });
    // Each failed attempt's write was rolled back.
    expect(await t.effects(task.id)).toBe(0);
    // The log lines carry the thrown error's stack, pointing at the handler; last_error does not.
    const retried = logger
      .messages('warn')
      .find((m) => m.includes(`Task ${task.id} (outcome.limited) failed attempt 1/2`));
    expect(retried).toMatch(/limited: always fails\n\s+at .*handler-outcomes\.e2e-spec/);
    const dead = logger.entries.find(
      (e) =>
        e.level === 'error' &&
        e.message.includes(`Task ${task.id} (outcome.limited) dead-lettered after 2`),
    );
    expect(dead?.stack).toMatch(
      /^Error: limited: always fails\n\s+at .*handler-outcomes\.e2e-spec/,
    );
  });
});

describe('handler context', () => {
  it('is { task, manager, sql, client, attempt, instanceId, signal }, the manager, sql and client in the claim transaction', async () => {
    const task = await t.delay.schedule({
      type: 'outcome.context',
      delay: '1m',
      key: 'ctx:1',
      payload: { p: 1 },
    });
    await t.tester.advance('1m');
    expect(seen.has(task.id)).toBe(true);
    const { context, inTransaction, transactionIds } = seen.get(task.id)!;
    expect(Object.keys(context).sort()).toEqual([
      'attempt',
      'client',
      'instanceId',
      'manager',
      'occurrence',
      'signal',
      'sql',
      'task',
    ]);
    // One transaction, whichever way the handler writes.
    expect(new Set(transactionIds).size).toBe(1);
    // Set for an occurrence of a recurring schedule only.
    expect(context.occurrence).toBeUndefined();
    expect(context.signal.aborted).toBe(false);
    expect(context.attempt).toBe(1);
    expect(context.instanceId).toBe('outcomes');
    expect(inTransaction).toBe(true);
    expect(context.task).toMatchObject({
      id: task.id,
      type: 'outcome.context',
      key: 'ctx:1',
      payload: { p: 1 },
      attempts: 1,
    });
    expect(context.manager).toBeInstanceOf(EntityManager);
    expect(context.manager.connection).toBe(t.dataSource);
    expect(await t.effects(task.id)).toBe(1);
  });
});
