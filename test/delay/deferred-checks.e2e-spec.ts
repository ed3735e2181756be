import { Injectable, Module } from '@nestjs/common';
import { DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { recordEffect, SECOND, useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

/**
 * Handlers whose writes break a constraint checked only at COMMIT
 * (DEFERRABLE INITIALLY DEFERRED): the failure is the task's, charged to it
 * like any failed attempt, and its batch-mates commit (issue 27).
 */
@Injectable()
class DeferredHandlers {
  /** Writes its effect, then a child row whose parent never exists. */
  @DelayedTaskHandler('deferred.breaks-fk', {
    maxAttempts: 2,
    retry: { baseDelay: '1s', jitter: 0 },
  })
  async breaksForeignKey(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    await context.manager.query(`INSERT INTO deferred_child (parent_id) VALUES (-1)`);
  }

  /** The same under a concurrency limit: its claim (the limit gate's) runs with savepoints from the start. */
  @DelayedTaskHandler('deferred.limited-breaks-fk', { maxAttempts: 1, limit: { concurrency: 1 } })
  async limitedBreaksForeignKey(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    await context.manager.query(`INSERT INTO deferred_child (parent_id) VALUES (-2)`);
  }

  /** Claims a unique code: of two tasks claiming one code, the second breaks the constraint. */
  @DelayedTaskHandler('deferred.claims-code', { maxAttempts: 1 })
  async claimsCode(payload: { code: string }, context: TaskContext) {
    await recordEffect(context.manager, context);
    await context.manager.query(`INSERT INTO deferred_code (code) VALUES ($1)`, [payload.code]);
  }

  /** Inserts a child before its parent: legal only because the key is checked at COMMIT. */
  @DelayedTaskHandler('deferred.child-first')
  async childFirst(payload: { id: number }, context: TaskContext) {
    await recordEffect(context.manager, context);
    await context.manager.query(`INSERT INTO deferred_child (parent_id) VALUES ($1)`, [payload.id]);
    await context.manager.query(`INSERT INTO deferred_parent (id) VALUES ($1)`, [payload.id]);
  }
}

@Module({ providers: [DeferredHandlers] })
class DeferredModule {}

const app = useDelayTestApp(
  { concurrency: 1, batchSize: 50 },
  { modules: [{ module: DeferredModule }] },
);
let t: DelayTestApp;

async function createDeferredTables(on: DelayTestApp): Promise<void> {
  await on.query(`CREATE TABLE deferred_parent (id int PRIMARY KEY)`);
  await on.query(
    `CREATE TABLE deferred_child (parent_id int REFERENCES deferred_parent DEFERRABLE INITIALLY DEFERRED)`,
  );
  await on.query(
    `CREATE TABLE deferred_code (code text, CONSTRAINT deferred_code_unique UNIQUE (code) DEFERRABLE INITIALLY DEFERRED)`,
  );
}

beforeAll(async () => {
  t = app.t;
  await createDeferredTables(t);
});

beforeEach(() => t.quiesce());

const effectsTask = () => ({ type: 'test.effect', delay: 0 });

describe('a handler that breaks a deferred constraint', () => {
  it('fails its attempt, is dead-lettered after maxAttempts naming the constraint; its batch-mates commit', async () => {
    const before = await t.delay.scheduleMany(Array.from({ length: 5 }, effectsTask));
    const breaker = await t.delay.schedule({ type: 'deferred.breaks-fk', delay: 0 });
    const after = await t.delay.scheduleMany(Array.from({ length: 5 }, effectsTask));

    const first = await t.tester.runDue();
    expect(first.byType['test.effect']).toMatchObject({ executed: 10, failed: 0 });
    expect(first.byType['deferred.breaks-fk']).toMatchObject({ executed: 0, failed: 1 });
    for (const mate of [...before, ...after]) expect(await t.effects(mate.id)).toBe(1);
    const failed = await t.delay.get({ id: breaker.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toMatch(/deferred_child_parent_id_fkey/);
    // Retried with its backoff, not every second for ever.
    expect(failed!.dueAt.getTime()).toBe(t.clock.now() + SECOND);

    const second = await t.tester.advance(SECOND);
    expect(second.byType['deferred.breaks-fk']).toMatchObject({ deadLettered: 1 });
    const dead = await t.delay.get({ id: breaker.id });
    expect(dead).toMatchObject({ state: 'dead', attempts: 2 });
    expect(dead!.lastError).toMatch(/deferred_child_parent_id_fkey/);
    // Nothing it wrote committed, nothing is left to charge.
    expect(await t.effects(breaker.id)).toBe(0);
    expect(await t.query(`SELECT * FROM deferred_child`)).toEqual([]);
    expect(await t.query(`SELECT * FROM delay_attempt`)).toEqual([]);
  });

  it('of two tasks that break a deferred unique constraint together, the second fails; the first commits', async () => {
    const [one, two] = await t.delay.scheduleMany([
      { type: 'deferred.claims-code', payload: { code: 'A' }, delay: 0 },
      { type: 'deferred.claims-code', payload: { code: 'A' }, delay: 0 },
    ]);
    const report = await t.tester.runDue();
    expect(report.byType['deferred.claims-code']).toMatchObject({ executed: 1, deadLettered: 1 });
    expect(await t.delay.get({ id: one.id })).toMatchObject({ state: 'executed' });
    const dead = await t.delay.get({ id: two.id });
    expect(dead).toMatchObject({ state: 'dead', attempts: 1 });
    expect(dead!.lastError).toMatch(/deferred_code_unique/);
    expect(await t.query(`SELECT code FROM deferred_code`)).toEqual([{ code: 'A' }]);
  });

  it('a batch-mate that relies on deferral within its own writes still commits when the batch reruns with savepoints', async () => {
    const mate = await t.delay.schedule({
      type: 'deferred.child-first',
      payload: { id: 7 },
      delay: 0,
    });
    const breaker = await t.delay.schedule({ type: 'deferred.breaks-fk', delay: 0 });
    const later = await t.delay.schedule({
      type: 'deferred.child-first',
      payload: { id: 8 },
      delay: 0,
    });
    const report = await t.tester.runDue();
    expect(report.byType['deferred.child-first']).toMatchObject({ executed: 2, failed: 0 });
    expect(await t.effects(mate.id)).toBe(1);
    expect(await t.effects(later.id)).toBe(1);
    expect(await t.delay.get({ id: breaker.id })).toMatchObject({ state: 'pending', attempts: 1 });
  });

  it('of a limited type (its claim runs with savepoints from the start) fails alone too', async () => {
    const task = await t.delay.schedule({ type: 'deferred.limited-breaks-fk', delay: 0 });
    const mate = await t.delay.schedule({ type: 'test.effect', delay: 0 });
    const report = await t.tester.runDue();
    expect(report.byType['deferred.limited-breaks-fk']).toMatchObject({ deadLettered: 1 });
    const dead = await t.delay.get({ id: task.id });
    expect(dead).toMatchObject({ state: 'dead', attempts: 1 });
    expect(dead!.lastError).toMatch(/deferred_child_parent_id_fkey/);
    expect(await t.effects(mate.id)).toBe(1);
  });
});

describe('a deferrable constraint added while the app runs', () => {
  // A database of its own, with no deferrable constraint when the app starts.
  const fresh = useDelayTestApp(
    { concurrency: 1, batchSize: 50 },
    { modules: [{ module: DeferredModule }] },
  );

  it('is checked in the first claim that breaks it: that task fails, its batch-mates commit', async () => {
    const f = fresh.t;
    // The app's schema has deferrable keys of its own: made immediate in this database.
    for (const table of ['order_idempotency_key', 'user_idempotency_key']) {
      await f.query(`ALTER TABLE ${table} ALTER CONSTRAINT ${table}_order_id_fkey NOT DEFERRABLE`);
    }
    // Claims run while the database has no deferrable constraint…
    const early = await f.delay.schedule(effectsTask());
    await f.tester.runDue();
    expect(await f.effects(early.id)).toBe(1);
    // …then a migration adds one.
    await createDeferredTables(f);

    const before = await f.delay.scheduleMany(Array.from({ length: 3 }, effectsTask));
    const breaker = await f.delay.schedule({ type: 'deferred.breaks-fk', delay: 0 });
    const after = await f.delay.scheduleMany(Array.from({ length: 3 }, effectsTask));
    const report = await f.tester.runDue();
    expect(report.byType['test.effect']).toMatchObject({ executed: 6, failed: 0 });
    expect(report.byType['deferred.breaks-fk']).toMatchObject({ executed: 0, failed: 1 });
    for (const mate of [...before, ...after]) expect(await f.effects(mate.id)).toBe(1);
    const failed = await f.delay.get({ id: breaker.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toMatch(/deferred_child_parent_id_fkey/);
    expect(await f.query(`SELECT * FROM deferred_child`)).toEqual([]);
  });
});
